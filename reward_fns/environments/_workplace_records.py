"""The workplace's web analytics, project board and CRM tools.

The workplace's web analytics, project board and CRM: what each tool does to a session's `Workplace` and
answers, as NeMo Gym's workplace_assistant tools do (counts per day in date order, ids zero-padded to 8
digits, a plot that is only its file name).

Each function takes the tables and the tool's arguments (None: not given) and returns the tool's output;
a failure NeMo Gym's server reported as "Error executing tool ..." raises `ToolError`.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from rewardfleet.reward_fns.environments._workplace_common import (
    Pattern,
    delete_row,
    lowered,
    next_id,
    page_of,
)
from rewardfleet.reward_fns.environments._workplace_tables import Row, Workplace
from rewardfleet.services.environments import ToolError

PLOT_VALUES = (
    "total_visits",
    "session_duration_seconds",
    "user_engaged",
    "visits_direct",
    "visits_referral",
    "visits_search_engine",
    "visits_social_media",
)
PLOT_TYPES = ("bar", "line", "scatter", "histogram")
LISTS = ("Backlog", "In Progress", "In Review", "Completed")
BOARDS = ("Back end", "Front end", "Design")
STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
CUSTOMER_FIELDS = (
    "customer_name, assigned_to_email, customer_email, customer_phone, last_contact_date, "
    "product_interest, status, notes, follow_up_by"
)
EMAIL_FORMAT = re.compile(r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")
SEARCH_CUSTOMERS = "customer_relationship_manager_search_customers"
NA_MASK = "Cannot mask with non-boolean array containing NA / NaN values"
LIST_REFUSAL = "List not valid. Please choose from: 'Backlog', 'In Progress', 'In Review', 'Completed'."
BOARD_REFUSAL = "Board not valid. Please choose from: 'Back end', 'Front end', 'Design'."
ASSIGNEE_REFUSAL = "Assignee email not valid. Please choose from the list of team members."


def _visits(w: Workplace, time_min: str | None, time_max: str | None) -> list[Row]:
    """Visits whose date (as text) is within the bounds given."""
    return [
        row
        for row in w.analytics.rows
        if (not time_min or row["date_of_visit"] >= time_min)
        and (not time_max or row["date_of_visit"] <= time_max)
    ]


def _per_day(rows: list[Row], value: Any) -> dict[str, Any]:
    """{day: sum of value(row)} in date order, as pandas' groupby over date_of_visit gives it."""
    totals: dict[str, Any] = defaultdict(int)
    for row in rows:
        totals[row["date_of_visit"]] += value(row)
    return dict(sorted(totals.items()))


def get_visitor_information_by_id(w: Workplace, visitor_id: str | None = None) -> Any:
    if not visitor_id:
        return "Visitor ID not provided."
    found = w.analytics.records(w.analytics.find("visitor_id", visitor_id))
    if w.durations_as_numbers:
        found = [{**row, "session_duration_seconds": float(row["session_duration_seconds"])} for row in found]
    return found or "Visitor not found."


def create_plot(
    w: Workplace,
    time_min: str | None = None,
    time_max: str | None = None,
    value_to_plot: str | None = None,
    plot_type: str | None = None,
) -> str:
    if not time_min:
        return "Start date not provided."
    if not time_max:
        return "End date not provided."
    if value_to_plot not in PLOT_VALUES:
        return f"Value to plot must be one of {', '.join(repr(v) for v in PLOT_VALUES)}"
    if plot_type not in PLOT_TYPES:
        return "Plot type must be one of 'bar', 'line', 'scatter', or 'histogram'"
    path = f"plots/{time_min}_{time_max}_{value_to_plot}_{plot_type}.png"
    w.plots.append({"file_path": path}, renumber=True)
    return path


def total_visits_count(w: Workplace, time_min: str | None = None, time_max: str | None = None) -> Any:
    return _per_day(_visits(w, time_min, time_max), lambda row: 1)


def engaged_users_count(w: Workplace, time_min: str | None = None, time_max: str | None = None) -> Any:
    return _per_day(_visits(w, time_min, time_max), lambda row: int(bool(row["user_engaged"])))


def traffic_source_count(
    w: Workplace, time_min: str | None = None, time_max: str | None = None, traffic_source: str | None = None
) -> Any:
    if traffic_source:
        return _per_day(
            _visits(w, time_min, time_max), lambda row: int(row["traffic_source"] == traffic_source)
        )
    return _per_day(_visits(w, time_min, time_max), lambda row: 1)


def get_average_session_duration(
    w: Workplace, time_min: str | None = None, time_max: str | None = None
) -> Any:
    """Mean duration per day. Without bounds NeMo Gym converts its own table's durations to numbers, which
    later visitor lookups then show (kept as `durations_as_numbers`)."""
    days: dict[str, list[float]] = defaultdict(list)
    try:
        for row in _visits(w, time_min, time_max):
            days[row["date_of_visit"]].append(float(row["session_duration_seconds"]))
    except (TypeError, ValueError) as exc:
        raise ToolError(f"Error executing tool 'analytics_get_average_session_duration': {exc}") from None
    if not time_min and not time_max:
        w.durations_as_numbers = True
    return {day: math.fsum(values) / len(values) for day, values in sorted(days.items())}


def get_task_information_by_id(w: Workplace, task_id: str | None = None, field: str | None = None) -> Any:
    if not task_id:
        return "Task ID not provided."
    if not field:
        return "Field not provided."
    found = w.projects.records(w.projects.find("task_id", task_id))
    if not found:
        return "Task not found."
    return {field: found[0][field]} if field in found[0] else "Field not found."


def search_tasks(
    w: Workplace,
    task_name: str | None = None,
    assigned_to_email: str | None = None,
    list_name: str | None = None,
    due_date: str | None = None,
    board: str | None = None,
) -> Any:
    if not any([task_name, assigned_to_email, list_name, due_date, board]):
        return "No search parameters provided."
    if assigned_to_email and not EMAIL_FORMAT.match(assigned_to_email):
        return "Invalid email format for assigned_to_email."
    rows = list(w.projects.rows)
    if assigned_to_email:
        wanted = assigned_to_email.lower()
        rows = [row for row in rows if lowered(row.get("assigned_to_email")) == wanted]
    for column, given in (
        ("task_name", task_name),
        ("list_name", list_name),
        ("due_date", due_date),
        ("board", board),
    ):
        if given:
            matches = Pattern("project_management_search_tasks", given)
            rows = [row for row in rows if matches(row.get(column))]
    return w.projects.records(rows)


def _assignees(w: Workplace) -> set[str | None]:
    return {lowered(row.get("assigned_to_email")) for row in w.projects.rows}


def create_task(
    w: Workplace,
    task_name: str | None = None,
    assigned_to_email: str | None = None,
    list_name: str | None = None,
    due_date: str | None = None,
    board: str | None = None,
) -> str:
    if not all([task_name, assigned_to_email, list_name, due_date, board]):
        return "Missing task details."
    assert assigned_to_email
    assigned_to_email = assigned_to_email.lower()
    if assigned_to_email not in _assignees(w):
        return ASSIGNEE_REFUSAL
    if list_name not in LISTS:
        return LIST_REFUSAL
    if board not in BOARDS:
        return BOARD_REFUSAL
    task_id = str(next_id("project_management_create_task", w.projects, "task_id")).zfill(8)
    row = {
        "task_id": task_id,
        "task_name": task_name,
        "assigned_to_email": assigned_to_email,
        "list_name": list_name,
        "due_date": due_date,
        "board": board,
    }
    w.projects.append(row, renumber=True)
    return task_id


def delete_task(w: Workplace, task_id: str | None = None) -> str:
    return delete_row(w.projects, "task_id", task_id, "Task")


def update_task(
    w: Workplace, task_id: str | None = None, field: str | None = None, new_value: str | None = None
) -> str:
    if not task_id or not field or not new_value:
        return "Task ID, field, or new value not provided."
    if field == "assigned_to_email":
        new_value = new_value.lower()
    if field == "board" and new_value not in BOARDS:
        return BOARD_REFUSAL
    if field == "list_name" and new_value not in LISTS:
        return LIST_REFUSAL
    if field == "assigned_to_email" and new_value not in _assignees(w):
        return ASSIGNEE_REFUSAL
    if not w.projects.has("task_id", task_id):
        return "Task not found."
    if field not in w.projects.columns:
        return "Field not valid."
    w.projects.assign("task_id", task_id, field, new_value)
    return "Task updated successfully."


def search_customers(
    w: Workplace,
    customer_name: str | None = None,
    customer_email: str | None = None,
    product_interest: str | None = None,
    status: str | None = None,
    assigned_to_email: str | None = None,
    last_contact_date_min: str | None = None,
    last_contact_date_max: str | None = None,
    follow_up_by_min: str | None = None,
    follow_up_by_max: str | None = None,
    page: int | None = None,
    page_size: int | None = None,
) -> Any:
    searched = {
        "customer_name": customer_name,
        "customer_email": customer_email,
        "product_interest": product_interest,
        "status": status,
        "assigned_to_email": assigned_to_email,
    }
    bounds = (
        ("last_contact_date", last_contact_date_min, last_contact_date_max),
        ("follow_up_by", follow_up_by_min, follow_up_by_max),
    )
    if not any([*searched.values(), *(v for _, low, high in bounds for v in (low, high))]):
        return "No search parameters provided. Please provide at least one parameter."
    rows = list(w.customers.rows)
    for column, given in searched.items():
        if given:
            if any(row.get(column) is None for row in rows):  # pandas refuses to filter with a missing match
                raise ToolError(f"Error executing tool '{SEARCH_CUSTOMERS}': {NA_MASK}")
            matches = Pattern(SEARCH_CUSTOMERS, given)
            rows = [row for row in rows if matches(row.get(column))]
    for column, low, high in bounds:
        if low:
            rows = [row for row in rows if isinstance(row.get(column), str) and row[column] >= low]
        if high:
            rows = [row for row in rows if isinstance(row.get(column), str) and row[column] <= high]
    if not rows:
        return "No customers found."
    return page_of(w.customers.records(rows), page or 1, page_size or 5, "customers", "customers")


def update_customer(
    w: Workplace, customer_id: str | None = None, field: str | None = None, new_value: str | None = None
) -> str:
    if not customer_id or not field or not new_value:
        return "Customer ID, field, or new value not provided."
    if field == "status" and new_value not in STATUSES:
        return f"Status not valid. Please choose from: {', '.join(repr(s) for s in STATUSES)}"
    if field == "product_interest" and new_value not in PRODUCTS:
        return f"Product interest not valid. Please choose from: {', '.join(repr(p) for p in PRODUCTS)}"
    if field in ("customer_email", "assigned_to_email"):
        new_value = new_value.lower()
    if not w.customers.has("customer_id", customer_id):
        return "Customer not found."
    if field not in w.customers.columns:
        return (
            f"Field not valid. Please choose from: {', '.join(repr(f) for f in CUSTOMER_FIELDS.split(', '))}"
        )
    w.customers.assign("customer_id", customer_id, field, new_value)
    return "Customer updated successfully."


def add_customer(
    w: Workplace,
    customer_name: str | None = None,
    assigned_to_email: str | None = None,
    status: str | None = None,
    customer_email: str | None = None,
    customer_phone: str | None = None,
    last_contact_date: str | None = None,
    product_interest: str | None = None,
    notes: str | None = None,
    follow_up_by: str | None = None,
) -> str:
    if not all([customer_name, assigned_to_email, status]):
        return "Please provide all required fields: customer_name, assigned_to_email, status."
    customer_id = str(
        next_id("customer_relationship_manager_add_customer", w.customers, "customer_id")
    ).zfill(8)
    row = {
        "customer_id": customer_id,
        "customer_name": customer_name,
        "customer_email": lowered(customer_email) if customer_email else customer_email,
        "customer_phone": customer_phone,
        "last_contact_date": last_contact_date,
        "product_interest": product_interest,
        "status": status,
        "assigned_to_email": lowered(assigned_to_email),
        "notes": "" if notes is None else notes,
        "follow_up_by": follow_up_by,
    }
    w.customers.append(row, renumber=True)
    return customer_id


def delete_customer(w: Workplace, customer_id: str | None = None) -> str:
    return delete_row(w.customers, "customer_id", customer_id, "Customer")
