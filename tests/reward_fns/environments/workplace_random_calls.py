"""Seeded random call sequences for workplace_assistant's oracle test, drawn from ids, words, dates, fields
and values of NeMo Gym's tables (and some that are not there)."""

from __future__ import annotations

import random
from typing import Any

from tests.reward_fns.environments.workplace_calls import Call

EMAILS = ["00000259", "00000373", "00000001", "00000499", "500", "501", "99999999", ""]
EVENTS = ["00000013", "00000275", "00000300", "00000301", "13", "abcdefgh", ""]
TASKS = ["00000149", "00000037", "00000300", "00000301", "zzz", ""]
CUSTOMERS = ["00000014", "00000107", "00000200", "00000201", "nope", ""]
WORDS = [
    *("kofi", "nadia", "Task Update", "wireframe", "", "a.*z", "Carlos", "sync", "review", "Hardware"),
    *("Won", "Lead", "proposal", "Back end", "Front", "2023-11", "leila.azizi@atlas.com", "x@y"),
]
DATES = [
    "2023-11-01",
    "2023-11-30",
    "2023-10-15",
    "2023-09-01 00:00:00",
    "2023-11-25 12:00:00",
    "2023-12-31",
    "",
]
FIELDS = [
    *("subject", "body", "event_name", "participant_email", "event_start", "duration", "status", "board"),
    *("list_name", "assigned_to_email", "notes", "customer_email", "product_interest", "task_name"),
    *("due_date", "colour", "event_id", "customer_id", "task_id"),
]
VALUES = [
    *("Won", "Lost", "won", "Design", "Front end", "Completed", "In Review", "Software", "Toys"),
    *("X@Y.COM", "carlos.rodriguez@atlas.com", "2023-12-01 10:00:00", "45", "0", "-3", "later", "hello"),
]


def random_calls(seed: int, count: int) -> list[Call]:
    """`count` calls drawn with `seed`: any tool, arguments from the lists above, optional ones left out
    at random (every argument is one the tool's schema takes, so both sides run every call)."""
    rng = random.Random(seed)

    def pick(options: list[Any]) -> Any:
        return rng.choice(options)

    def some(arguments: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in arguments.items() if rng.random() < 0.7}

    def day() -> str:
        return str(pick(DATES))[:10]

    makers = [
        lambda: ("company_directory_find_email_address", some({"name": pick(WORDS)})),
        lambda: ("email_get_email_information_by_id", {"email_id": pick(EMAILS), "field": pick(FIELDS)}),
        lambda: (
            "email_search_emails",
            some(
                {
                    "query": pick(WORDS),
                    "date_min": day(),
                    "date_max": day(),
                    "page": rng.randint(-1, 4),
                    "page_size": rng.randint(1, 30),
                }
            ),
        ),
        lambda: (
            "email_send_email",
            {
                "recipient": pick(["a@b.co", "Kofi.Mensah@atlas.com", "bad", ""]),
                "subject": pick(VALUES),
                "body": pick(VALUES),
            },
        ),
        lambda: ("email_delete_email", {"email_id": pick(EMAILS)}),
        lambda: ("email_forward_email", {"email_id": pick(EMAILS), "recipient": pick(["a@b.co", "bad"])}),
        lambda: ("email_reply_email", {"email_id": pick(EMAILS), "body": pick(VALUES)}),
        lambda: ("calendar_get_event_information_by_id", {"event_id": pick(EVENTS), "field": pick(FIELDS)}),
        lambda: (
            "calendar_search_events",
            some(
                {
                    "query": pick(WORDS),
                    "time_min": pick(DATES),
                    "time_max": pick(DATES),
                    "page": rng.randint(0, 3),
                    "page_size": rng.randint(1, 9),
                }
            ),
        ),
        lambda: (
            "calendar_create_event",
            {
                "event_name": pick(VALUES),
                "participant_email": pick(["A@B.co", "x@y.z"]),
                "event_start": pick(DATES[1:-1]),
                "duration": pick(VALUES),
            },
        ),
        lambda: ("calendar_delete_event", {"event_id": pick(EVENTS)}),
        lambda: (
            "calendar_update_event",
            {"event_id": pick(EVENTS), "field": pick(FIELDS), "new_value": pick(VALUES)},
        ),
        lambda: ("analytics_get_visitor_information_by_id", {"visitor_id": pick(["0860", "4426", "nope"])}),
        lambda: (
            "analytics_create_plot",
            {
                "time_min": pick(DATES),
                "time_max": pick(DATES),
                "value_to_plot": pick(["total_visits", "user_engaged", "x"]),
                "plot_type": pick(["bar", "pie"]),
            },
        ),
        lambda: ("analytics_total_visits_count", some({"time_min": day(), "time_max": day()})),
        lambda: ("analytics_engaged_users_count", some({"time_min": day(), "time_max": day()})),
        lambda: (
            "analytics_traffic_source_count",
            some(
                {
                    "time_min": day(),
                    "time_max": day(),
                    "traffic_source": pick(["direct", "social media", "no"]),
                }
            ),
        ),
        lambda: ("analytics_get_average_session_duration", some({"time_min": day(), "time_max": day()})),
        lambda: (
            "project_management_get_task_information_by_id",
            {"task_id": pick(TASKS), "field": pick(FIELDS)},
        ),
        lambda: (
            "project_management_search_tasks",
            some(
                {
                    "task_name": pick(WORDS),
                    "assigned_to_email": pick(WORDS),
                    "list_name": pick(VALUES),
                    "due_date": day()[:7],
                    "board": pick(VALUES),
                }
            ),
        ),
        lambda: (
            "project_management_create_task",
            {
                "task_name": pick(VALUES),
                "assigned_to_email": pick(["leila.azizi@atlas.com", "x@y.z"]),
                "list_name": pick(["Backlog", "Done"]),
                "due_date": "2023-12-01",
                "board": pick(["Design", "Kitchen"]),
            },
        ),
        lambda: ("project_management_delete_task", {"task_id": pick(TASKS)}),
        lambda: (
            "project_management_update_task",
            {"task_id": pick(TASKS), "field": pick(FIELDS), "new_value": pick(VALUES)},
        ),
        lambda: (
            "customer_relationship_manager_search_customers",
            some(
                {
                    "customer_name": pick(WORDS),
                    "status": pick(VALUES),
                    "product_interest": pick(VALUES),
                    "last_contact_date_min": pick(DATES),
                    "follow_up_by_max": pick(DATES),
                    "page": rng.randint(0, 3),
                    "page_size": rng.randint(1, 9),
                }
            ),
        ),
        lambda: (
            "customer_relationship_manager_update_customer",
            {"customer_id": pick(CUSTOMERS), "field": pick(FIELDS), "new_value": pick(VALUES)},
        ),
        lambda: (
            "customer_relationship_manager_add_customer",
            {
                "customer_name": pick(["Dak", "Zed"]),
                "assigned_to_email": "Nadia.Moreau@atlas.com",
                "status": pick(["Lead", "Won"]),
                **some({"customer_email": "A@B.co", "notes": "n"}),
            },
        ),
        lambda: ("customer_relationship_manager_delete_customer", {"customer_id": pick(CUSTOMERS)}),
    ]
    return [rng.choice(makers)() for _ in range(count)]
