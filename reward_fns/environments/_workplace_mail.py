"""The workplace's company directory, mailbox and calendar tools.

The workplace's company directory, mailbox and calendar: what each tool does to a session's `Workplace`
and answers, as NeMo Gym's workplace_assistant tools do (their answers, refusals and quirks: an email id
minted from the largest id compared as text, a calendar event appended with index label 0).

Each function takes the tables and the tool's arguments (None: not given) and returns the tool's output;
a failure NeMo Gym's server reported as "Error executing tool ..." raises `ToolError`.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.reward_fns.environments._workplace_common import (
    Pattern,
    delete_row,
    lowered,
    next_id,
    page_of,
    timestamp,
)
from rewardfleet.reward_fns.environments._workplace_tables import Workplace
from rewardfleet.services.environments import ToolError

NOW = "2023-11-30 23:59:00"  # NeMo Gym's fixed current time, the send time of every email sent
EVENT_FIELDS = ("event_id", "event_name", "participant_email", "event_start", "duration")
EVENT_SETTABLE = EVENT_FIELDS[1:]


def find_email_address(w: Workplace, name: str | None = None) -> Any:
    if not name:
        return "Name not provided."
    matches = Pattern("company_directory_find_email_address", name.lower())
    return [address for address in w.directory if matches(address)]


def get_email_information_by_id(w: Workplace, email_id: str | None = None, field: str | None = None) -> Any:
    if not email_id:
        return "Email ID not provided."
    if not field:
        return "Field not provided."
    found = w.emails.records(w.emails.find("email_id", email_id))
    if not found:
        return "Email not found."
    if field not in found[0]:
        return f"Field '{field}' not found. Available fields: {', '.join(found[0])}"
    return {field: found[0][field]}


def _text(value: Any) -> str:
    return "nan" if value is None else str(value)  # how pandas' NaN reads in an f-string


def search_emails(
    w: Workplace,
    query: str | None = None,
    date_min: str | None = None,
    date_max: str | None = None,
    page: int | None = None,
    page_size: int | None = None,
) -> Any:
    words = (query or "").lower().split()
    try:
        hits = []
        for row in w.emails.rows:
            text = (
                f"{_text(row.get('subject'))} {_text(row.get('body'))} {_text(row.get('sender/recipient'))}"
            )
            if all(word in text.lower() for word in words):
                hits.append((timestamp(row.get("sent_datetime")), row))
        hits.sort(key=lambda hit: hit[0], reverse=True)  # stable: equal times keep the table's order
        low = timestamp(date_min).date() if date_min else None
        high = timestamp(date_max).date() if date_max else None
    except ValueError as exc:
        raise ToolError(f"Error searching emails: {exc}") from None
    rows = [
        row
        for sent, row in hits
        if (low is None or sent.date() >= low) and (high is None or sent.date() <= high)
    ]
    if not rows:
        return "No emails found."
    return page_of(w.emails.records(rows), page or 1, page_size or 5, "emails", "emails")


def send_email(
    w: Workplace, recipient: str | None = None, subject: str | None = None, body: str | None = None
) -> str:
    if not recipient or not subject or not body:
        return "Recipient, subject, or body not provided."
    if "@" not in recipient or "." not in recipient:
        return "Invalid recipient email address."
    email_id = str(next_id("email_send_email", w.emails, "email_id")) if w.emails.rows else "1"
    row = {
        "email_id": email_id,
        "inbox/outbox": "outbox",
        "sender/recipient": recipient.lower(),
        "subject": subject,
        "sent_datetime": NOW,
        "body": body,
    }
    w.emails.append(row, renumber=True)
    return "Email sent successfully."


def delete_email(w: Workplace, email_id: str | None = None) -> str:
    return delete_row(w.emails, "email_id", email_id, "Email")


def forward_email(w: Workplace, email_id: str | None = None, recipient: str | None = None) -> str:
    if not email_id or not recipient:
        return "Email ID or recipient not provided."
    if "@" not in recipient or "." not in recipient:
        return "Invalid recipient email address."
    found = w.emails.find("email_id", email_id)
    if not found:
        return "Email not found."
    result = send_email(w, recipient.lower(), f"FW: {_text(found[0].get('subject'))}", found[0].get("body"))
    return result if "Error" in result or "Invalid" in result else "Email forwarded successfully."


def reply_email(w: Workplace, email_id: str | None = None, body: str | None = None) -> str:
    if not email_id or not body:
        return "Email ID or body not provided."
    found = w.emails.find("email_id", email_id)
    if not found:
        return "Email not found."
    email = found[0]
    result = send_email(w, email.get("sender/recipient"), f"RE: {_text(email.get('subject'))}", body)
    return result if "Error" in result or "Invalid" in result else "Email replied successfully."


def _event_id_ok(event_id: str) -> bool:
    return len(event_id) == 8 and event_id.isdigit()


def get_event_information_by_id(w: Workplace, event_id: str | None = None, field: str | None = None) -> Any:
    if not event_id:
        return "Event ID not provided."
    if not field:
        return "Field not provided."
    if not _event_id_ok(event_id):
        return "Invalid event ID format. Expected 8-digit ID."
    if field not in EVENT_FIELDS:
        return f"Invalid field. Available fields are: {', '.join(EVENT_FIELDS)}"
    found = w.calendar.records(w.calendar.find("event_id", event_id))
    if not found:
        return "Event not found."
    return {field: found[0][field]} if field in found[0] else "Field not found."


def search_events(
    w: Workplace,
    query: str | None = None,
    time_min: str | None = None,
    time_max: str | None = None,
    page: int | None = None,
    page_size: int | None = None,
) -> Any:
    bounds = []
    for name, given in (("time_min", time_min), ("time_max", time_max)):
        try:
            bounds.append(timestamp(given) if given else None)
        except ValueError:
            return f"Invalid {name} format. Expected YYYY-MM-DD HH:MM:SS."
    low, high = bounds
    matches = Pattern("calendar_search_events", query or "")
    try:
        events = [
            (timestamp(row.get("event_start")), row)
            for row in w.calendar.rows
            if matches(row.get("event_name")) or matches(row.get("participant_email"))
        ]
    except ValueError as exc:
        raise ToolError(f"Error executing tool 'calendar_search_events': {exc}") from None
    events = [
        (start, row)
        for start, row in events
        if (low is None or start >= low) and (high is None or start <= high)
    ]
    if not events:
        return "No events found."
    events.sort(key=lambda event: event[0], reverse=True)
    return page_of(
        w.calendar.records([row for _, row in events]), page or 1, page_size or 5, "events", "events"
    )


def _duration_refusal(duration: str) -> str | None:
    try:
        minutes = int(duration)
    except ValueError:
        return "Invalid duration format. Expected a number of minutes."
    return "Duration must be a positive number of minutes." if minutes <= 0 else None


def create_event(
    w: Workplace,
    event_name: str | None = None,
    participant_email: str | None = None,
    event_start: str | None = None,
    duration: str | None = None,
) -> str:
    for value, refusal in (
        (event_name, "Event name not provided."),
        (participant_email, "Participant email not provided."),
        (event_start, "Event start not provided."),
        (duration, "Event duration not provided."),
    ):
        if not value:
            return refusal
    assert participant_email and event_start and duration
    try:
        timestamp(event_start)
    except ValueError:
        return "Invalid event_start format. Expected YYYY-MM-DD HH:MM:SS."
    wrong_duration = _duration_refusal(duration)
    if wrong_duration is not None:
        return wrong_duration
    event_id = str(next_id("calendar_create_event", w.calendar, "event_id")).zfill(8)
    row = {
        "event_id": event_id,
        "event_name": event_name,
        "participant_email": participant_email.lower(),
        "event_start": event_start,
        "duration": duration,
    }
    w.calendar.append(row, renumber=False)
    return event_id


def delete_event(w: Workplace, event_id: str | None = None) -> str:
    if not event_id:
        return "Event ID not provided."
    if not _event_id_ok(event_id):
        return "Invalid event ID format. Expected 8-digit ID."
    return delete_row(w.calendar, "event_id", event_id, "Event")


def update_event(
    w: Workplace, event_id: str | None = None, field: str | None = None, new_value: str | None = None
) -> str:
    if not event_id or not field or not new_value:
        return "Event ID, field, or new value not provided."
    if not _event_id_ok(event_id):
        return "Invalid event ID format. Expected 8-digit ID."
    if field not in EVENT_SETTABLE:
        return f"Invalid field. Available fields are: {', '.join(EVENT_SETTABLE)}"
    if field == "event_start":
        try:
            timestamp(new_value)
        except ValueError:
            return "Invalid event_start format. Expected YYYY-MM-DD HH:MM:SS."
    elif field == "duration":
        refusal = _duration_refusal(new_value)
        if refusal is not None:
            return refusal
    if not w.calendar.has("event_id", event_id):
        return "Event not found."
    value: str | None = lowered(new_value) if field == "participant_email" else new_value
    w.calendar.assign("event_id", event_id, field, value)
    return "Event updated successfully."
