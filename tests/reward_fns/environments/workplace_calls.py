"""The fixed script of workplace_assistant's oracle test: every tool, NeMo Gym's refusals, bad patterns,
missing values and the stateful quirks (random sequences: workplace_random_calls.py)."""

from __future__ import annotations

from typing import Any

Call = tuple[str, dict[str, Any]]

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("company_directory_find_email_address", {"name": "Nadia"}),
    ("company_directory_find_email_address", {"name": "a.*z"}),
    ("company_directory_find_email_address", {"name": ""}),
    ("email_get_email_information_by_id", {"email_id": "00000259", "field": "subject"}),
    ("email_get_email_information_by_id", {"email_id": "00000259", "field": "colour"}),
    ("email_get_email_information_by_id", {"email_id": "99999999", "field": "body"}),
    ("email_search_emails", {"query": "kofi", "page": 2, "page_size": 3}),
    ("email_search_emails", {"query": "Task Update", "date_min": "2023-11-01", "date_max": "2023-11-20"}),
    ("email_search_emails", {"query": "no such words here"}),
    ("email_search_emails", {"page": 1000}),
    ("email_send_email", {"recipient": "Kofi.Mensah@atlas.com", "subject": "Hi", "body": "Hello"}),
    ("email_send_email", {"recipient": "nobody", "subject": "Hi", "body": "Hello"}),
    ("email_send_email", {"recipient": "a@b.c", "subject": "", "body": "x"}),
    ("email_forward_email", {"email_id": "00000259", "recipient": "Nadia.Moreau@atlas.com"}),
    ("email_reply_email", {"email_id": "00000373", "body": "Thanks"}),
    ("email_search_emails", {"query": "wireframe homepage", "page_size": 2}),
    ("email_delete_email", {"email_id": "00000001"}),
    ("email_delete_email", {"email_id": "00000001"}),
    ("email_search_emails", {"query": "FW:"}),
    ("calendar_get_event_information_by_id", {"event_id": "00000013", "field": "event_name"}),
    ("calendar_get_event_information_by_id", {"event_id": "13", "field": "event_name"}),
    ("calendar_get_event_information_by_id", {"event_id": "00000013", "field": "colour"}),
    ("calendar_get_event_information_by_id", {"event_id": "00009999", "field": "duration"}),
    (
        "calendar_search_events",
        {"query": "sync", "time_min": "2023-08-01 00:00:00", "time_max": "2023-09-01 00:00:00"},
    ),
    ("calendar_search_events", {"query": "luis", "page": 3, "page_size": 4}),
    ("calendar_search_events", {"query": "nothing like this"}),
    ("calendar_search_events", {"time_min": "not a date"}),
    (
        "calendar_create_event",
        {
            "event_name": "Retro",
            "participant_email": "Luis.Ortiz@atlas.com",
            "event_start": "2023-12-01 10:00:00",
            "duration": "30",
        },
    ),
    (
        "calendar_create_event",
        {
            "event_name": "Retro",
            "participant_email": "x@y.z",
            "event_start": "2023-12-01 10:00:00",
            "duration": "-5",
        },
    ),
    (
        "calendar_create_event",
        {
            "event_name": "Retro",
            "participant_email": "x@y.z",
            "event_start": "2023-12-01 10:00:00",
            "duration": "soon",
        },
    ),
    (
        "calendar_create_event",
        {
            "event_name": "Retro",
            "participant_email": "x@y.z",
            "event_start": "yesterday-ish",
            "duration": "5",
        },
    ),
    (
        "calendar_update_event",
        {"event_id": "00000013", "field": "participant_email", "new_value": "NIA.johnson@atlas.com"},
    ),
    ("calendar_update_event", {"event_id": "00000013", "field": "duration", "new_value": "0"}),
    ("calendar_update_event", {"event_id": "00000013", "field": "event_id", "new_value": "1"}),
    ("calendar_update_event", {"event_id": "00000300", "field": "event_name", "new_value": "Retro 2"}),
    ("calendar_search_events", {"query": "retro"}),
    ("calendar_delete_event", {"event_id": "00000275"}),
    ("calendar_delete_event", {"event_id": "00000275"}),
    ("calendar_delete_event", {"event_id": "abc"}),
    ("analytics_get_visitor_information_by_id", {"visitor_id": "0860"}),
    ("analytics_get_visitor_information_by_id", {"visitor_id": "nobody"}),
    ("analytics_total_visits_count", {"time_min": "2023-11-25", "time_max": "2023-11-30"}),
    ("analytics_total_visits_count", {}),
    ("analytics_engaged_users_count", {"time_min": "2023-11-28"}),
    ("analytics_traffic_source_count", {"time_min": "2023-11-25", "traffic_source": "direct"}),
    ("analytics_traffic_source_count", {"time_max": "2023-09-03"}),
    ("analytics_get_average_session_duration", {"time_min": "2023-11-27"}),
    ("analytics_get_visitor_information_by_id", {"visitor_id": "4426"}),
    ("analytics_get_average_session_duration", {}),
    ("analytics_get_visitor_information_by_id", {"visitor_id": "4426"}),
    (
        "analytics_create_plot",
        {
            "time_min": "2023-11-01",
            "time_max": "2023-11-30",
            "value_to_plot": "user_engaged",
            "plot_type": "line",
        },
    ),
    (
        "analytics_create_plot",
        {"time_min": "2023-11-01", "time_max": "2023-11-30", "value_to_plot": "colour", "plot_type": "line"},
    ),
    (
        "analytics_create_plot",
        {
            "time_min": "2023-11-01",
            "time_max": "2023-11-30",
            "value_to_plot": "total_visits",
            "plot_type": "pie",
        },
    ),
    ("project_management_get_task_information_by_id", {"task_id": "00000149", "field": "board"}),
    ("project_management_get_task_information_by_id", {"task_id": "00000149", "field": "colour"}),
    ("project_management_search_tasks", {"task_name": "carousel"}),
    (
        "project_management_search_tasks",
        {"assigned_to_email": "Leila.Azizi@atlas.com", "list_name": "backlog"},
    ),
    ("project_management_search_tasks", {"assigned_to_email": "not an email"}),
    ("project_management_search_tasks", {}),
    (
        "project_management_create_task",
        {
            "task_name": "Fix login",
            "assigned_to_email": "LEILA.azizi@atlas.com",
            "list_name": "Backlog",
            "due_date": "2023-12-05",
            "board": "Front end",
        },
    ),
    (
        "project_management_create_task",
        {
            "task_name": "Fix login",
            "assigned_to_email": "stranger@atlas.com",
            "list_name": "Backlog",
            "due_date": "2023-12-05",
            "board": "Front end",
        },
    ),
    (
        "project_management_create_task",
        {
            "task_name": "Fix login",
            "assigned_to_email": "leila.azizi@atlas.com",
            "list_name": "Later",
            "due_date": "2023-12-05",
            "board": "Front end",
        },
    ),
    (
        "project_management_update_task",
        {"task_id": "00000149", "field": "list_name", "new_value": "Completed"},
    ),
    ("project_management_update_task", {"task_id": "00000149", "field": "board", "new_value": "Kitchen"}),
    ("project_management_update_task", {"task_id": "00000149", "field": "colour", "new_value": "red"}),
    (
        "project_management_update_task",
        {"task_id": "00000300", "field": "assigned_to_email", "new_value": "Carlos.Rodriguez@atlas.com"},
    ),
    ("project_management_search_tasks", {"task_name": "fix login"}),
    ("project_management_delete_task", {"task_id": "00000037"}),
    ("project_management_delete_task", {"task_id": "00000037"}),
    ("customer_relationship_manager_search_customers", {"customer_name": "Casey Wilson"}),
    ("customer_relationship_manager_search_customers", {"status": "proposal", "page": 2, "page_size": 3}),
    (
        "customer_relationship_manager_search_customers",
        {"last_contact_date_min": "2023-11-25", "follow_up_by_max": "2023-12-20"},
    ),
    ("customer_relationship_manager_search_customers", {}),
    ("customer_relationship_manager_search_customers", {"customer_name": "Nobody Atall"}),
    (
        "customer_relationship_manager_add_customer",
        {
            "customer_name": "Dakota Thomas",
            "assigned_to_email": "Nadia.Moreau@atlas.com",
            "status": "Lead",
            "customer_email": "DT@x.com",
        },
    ),
    (
        "customer_relationship_manager_add_customer",
        {"customer_name": "", "assigned_to_email": "a@b.c", "status": "Lead"},
    ),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "00000014", "field": "status", "new_value": "Won"},
    ),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "00000014", "field": "status", "new_value": "won"},
    ),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "00000014", "field": "product_interest", "new_value": "Toys"},
    ),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "00000014", "field": "colour", "new_value": "red"},
    ),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "00000014", "field": "customer_email", "new_value": "CW@X.COM"},
    ),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "99999999", "field": "notes", "new_value": "x"},
    ),
    ("customer_relationship_manager_search_customers", {"customer_name": "Dakota"}),
    ("customer_relationship_manager_delete_customer", {"customer_id": "00000107"}),
    ("customer_relationship_manager_delete_customer", {"customer_id": "00000107"}),
    ("customer_relationship_manager_search_customers", {"customer_email": "cw@"}),
    ("company_directory_find_email_address", {"name": "("}),
    ("customer_relationship_manager_search_customers", {"customer_name": "[unclosed"}),
    ("calendar_search_events", {"query": "Retro", "time_max": "2023-12-31"}),
    ("customer_relationship_manager_search_customers", {"product_interest": "Consult", "page_size": 50}),
    (
        "customer_relationship_manager_update_customer",
        {"customer_id": "00000014", "field": "customer_id", "new_value": "zzz"},
    ),
    (
        "customer_relationship_manager_add_customer",
        {"customer_name": "After", "assigned_to_email": "a@b.c", "status": "Lead"},
    ),
]
