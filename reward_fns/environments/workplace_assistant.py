"""NeMo Gym's `workplace_assistant` (WorkBench): 27 tools over a company's records, graded by its tables.

NeMo Gym's `workplace_assistant` (WorkBench): 27 tools over a company's mailbox, calendar, web analytics,
project board and CRM; the reward is 1.0 when the session's tables end as the task's ground-truth calls
leave fresh ones, compared as NeMo Gym compares them (text case-folded, index labels included).

The tables are configuration, not code: `environments.settings.workplace_assistant.data_dir` names a folder
laid out as NeMo Gym's `resources_servers/workplace_assistant/csv_data/` (`_workplace_tables`), read once at
start-up. Without it the environment loads but refuses to seed. A session's state holds the task's ground
truth and the log of the calls that changed its tables; a call replays the log over the shared base
tables (or takes the tables this process left after that very log), so a session costs its own changes,
not a copy of the data. No tool reads or writes a file.

Answers are NeMo Gym's: `{"output": ...}`, its own refusals ("Email not found.") included as outputs. What
NeMo Gym's server answered as "Error executing tool ..." (a bad search pattern, an id that is not a number)
is a `ToolError`; arguments the typed signature refuses are a 422 naming the field.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.reward_fns.environments._workplace_base import (
    Day,
    LongText,
    Moment,
    Page,
    PageSize,
    Text,
    WorkplaceBase,
)
from rewardfleet.services.environments import Session, tool


class WorkplaceAssistant(WorkplaceBase):
    name = "workplace_assistant"

    @tool
    async def company_directory_find_email_address(self, session: Session, name: Text | None = None) -> Any:
        """Email addresses of the company directory containing a name (a case-insensitive pattern)."""
        return await self._act(session, "company_directory_find_email_address", name=name)

    @tool
    async def email_get_email_information_by_id(self, session: Session, email_id: Text, field: Text) -> Any:
        """One field of an email: email_id, inbox/outbox, sender/recipient, subject, sent_datetime or body."""
        return await self._act(session, "email_get_email_information_by_id", email_id=email_id, field=field)

    @tool
    async def email_search_emails(
        self,
        session: Session,
        query: Text | None = None,
        date_min: Day | None = None,
        date_max: Day | None = None,
        page: Page | None = None,
        page_size: PageSize | None = None,
    ) -> Any:
        """Emails, newest first, whose subject, body or sender/recipient hold every word of the query."""
        return await self._act(
            session,
            "email_search_emails",
            query=query,
            date_min=date_min,
            date_max=date_max,
            page=page,
            page_size=page_size,
        )

    @tool
    async def email_send_email(
        self, session: Session, recipient: Text, subject: LongText, body: LongText
    ) -> Any:
        """Sends an email."""
        return await self._act(session, "email_send_email", recipient=recipient, subject=subject, body=body)

    @tool
    async def email_delete_email(self, session: Session, email_id: Text) -> Any:
        """Deletes an email."""
        return await self._act(session, "email_delete_email", email_id=email_id)

    @tool
    async def email_forward_email(self, session: Session, email_id: Text, recipient: Text) -> Any:
        """Forwards an email to a recipient."""
        return await self._act(session, "email_forward_email", email_id=email_id, recipient=recipient)

    @tool
    async def email_reply_email(self, session: Session, email_id: Text, body: LongText) -> Any:
        """Replies to an email's sender (or, for a sent email, its recipient)."""
        return await self._act(session, "email_reply_email", email_id=email_id, body=body)

    @tool
    async def calendar_get_event_information_by_id(
        self, session: Session, event_id: Text, field: Text
    ) -> Any:
        """One field of an event (8-digit id): event_id, event_name, participant_email, event_start or
        duration."""
        return await self._act(
            session, "calendar_get_event_information_by_id", event_id=event_id, field=field
        )

    @tool
    async def calendar_search_events(
        self,
        session: Session,
        query: Text | None = None,
        time_min: Moment | None = None,
        time_max: Moment | None = None,
        page: Page | None = None,
        page_size: PageSize | None = None,
    ) -> Any:
        """Events, latest first, whose name or participant matches the query, starting within the bounds."""
        return await self._act(
            session,
            "calendar_search_events",
            query=query,
            time_min=time_min,
            time_max=time_max,
            page=page,
            page_size=page_size,
        )

    @tool
    async def calendar_create_event(
        self,
        session: Session,
        event_name: LongText,
        participant_email: Text,
        event_start: Moment,
        duration: Text,
    ) -> Any:
        """Creates an event (duration in minutes); answers its id."""
        return await self._act(
            session,
            "calendar_create_event",
            event_name=event_name,
            participant_email=participant_email,
            event_start=event_start,
            duration=duration,
        )

    @tool
    async def calendar_delete_event(self, session: Session, event_id: Text) -> Any:
        """Deletes an event (8-digit id)."""
        return await self._act(session, "calendar_delete_event", event_id=event_id)

    @tool
    async def calendar_update_event(
        self, session: Session, event_id: Text, field: Text, new_value: LongText
    ) -> Any:
        """Sets one field of an event: event_name, participant_email, event_start or duration."""
        return await self._act(
            session, "calendar_update_event", event_id=event_id, field=field, new_value=new_value
        )

    @tool
    async def analytics_get_visitor_information_by_id(self, session: Session, visitor_id: Text) -> Any:
        """The website visits of one visitor."""
        return await self._act(session, "analytics_get_visitor_information_by_id", visitor_id=visitor_id)

    @tool
    async def analytics_create_plot(
        self, session: Session, time_min: Day, time_max: Day, value_to_plot: Text, plot_type: Text
    ) -> Any:
        """Plots a metric between two dates (bar, line, scatter, histogram); answers the plot's file path."""
        return await self._act(
            session,
            "analytics_create_plot",
            time_min=time_min,
            time_max=time_max,
            value_to_plot=value_to_plot,
            plot_type=plot_type,
        )

    @tool
    async def analytics_total_visits_count(
        self, session: Session, time_min: Day | None = None, time_max: Day | None = None
    ) -> Any:
        """Visits per day between two dates."""
        return await self._act(session, "analytics_total_visits_count", time_min=time_min, time_max=time_max)

    @tool
    async def analytics_engaged_users_count(
        self, session: Session, time_min: Day | None = None, time_max: Day | None = None
    ) -> Any:
        """Engaged visitors per day between two dates."""
        return await self._act(session, "analytics_engaged_users_count", time_min=time_min, time_max=time_max)

    @tool
    async def analytics_traffic_source_count(
        self,
        session: Session,
        time_min: Day | None = None,
        time_max: Day | None = None,
        traffic_source: Text | None = None,
    ) -> Any:
        """Visits per day from one traffic source (direct, referral, search engine, social media)."""
        return await self._act(
            session,
            "analytics_traffic_source_count",
            time_min=time_min,
            time_max=time_max,
            traffic_source=traffic_source,
        )

    @tool
    async def analytics_get_average_session_duration(
        self, session: Session, time_min: Day | None = None, time_max: Day | None = None
    ) -> Any:
        """Mean session duration in seconds per day between two dates."""
        return await self._act(
            session, "analytics_get_average_session_duration", time_min=time_min, time_max=time_max
        )

    @tool
    async def project_management_get_task_information_by_id(
        self, session: Session, task_id: Text, field: Text
    ) -> Any:
        """One field of a task (8-digit id)."""
        return await self._act(
            session, "project_management_get_task_information_by_id", task_id=task_id, field=field
        )

    @tool
    async def project_management_search_tasks(
        self,
        session: Session,
        task_name: Text | None = None,
        assigned_to_email: Text | None = None,
        list_name: Text | None = None,
        due_date: Text | None = None,
        board: Text | None = None,
    ) -> Any:
        """Tasks matching every criterion given (the assignee exactly, the others as patterns)."""
        return await self._act(
            session,
            "project_management_search_tasks",
            task_name=task_name,
            assigned_to_email=assigned_to_email,
            list_name=list_name,
            due_date=due_date,
            board=board,
        )

    @tool
    async def project_management_create_task(
        self,
        session: Session,
        task_name: LongText,
        assigned_to_email: Text,
        list_name: Text,
        due_date: Text,
        board: Text,
    ) -> Any:
        """Creates a task on a board (Back end, Front end, Design) and list; answers its id."""
        return await self._act(
            session,
            "project_management_create_task",
            task_name=task_name,
            assigned_to_email=assigned_to_email,
            list_name=list_name,
            due_date=due_date,
            board=board,
        )

    @tool
    async def project_management_delete_task(self, session: Session, task_id: Text) -> Any:
        """Deletes a task (8-digit id)."""
        return await self._act(session, "project_management_delete_task", task_id=task_id)

    @tool
    async def project_management_update_task(
        self, session: Session, task_id: Text, field: Text, new_value: LongText
    ) -> Any:
        """Sets one field of a task."""
        return await self._act(
            session, "project_management_update_task", task_id=task_id, field=field, new_value=new_value
        )

    @tool
    async def customer_relationship_manager_search_customers(
        self,
        session: Session,
        customer_name: Text | None = None,
        customer_email: Text | None = None,
        product_interest: Text | None = None,
        status: Text | None = None,
        assigned_to_email: Text | None = None,
        last_contact_date_min: Moment | None = None,
        last_contact_date_max: Moment | None = None,
        follow_up_by_min: Moment | None = None,
        follow_up_by_max: Moment | None = None,
        page: Page | None = None,
        page_size: PageSize | None = None,
    ) -> Any:
        """Customers matching every criterion given (text as patterns, dates as bounds)."""
        return await self._act(
            session,
            "customer_relationship_manager_search_customers",
            customer_name=customer_name,
            customer_email=customer_email,
            product_interest=product_interest,
            status=status,
            assigned_to_email=assigned_to_email,
            last_contact_date_min=last_contact_date_min,
            last_contact_date_max=last_contact_date_max,
            follow_up_by_min=follow_up_by_min,
            follow_up_by_max=follow_up_by_max,
            page=page,
            page_size=page_size,
        )

    @tool
    async def customer_relationship_manager_update_customer(
        self, session: Session, customer_id: Text, field: Text, new_value: LongText
    ) -> Any:
        """Sets one field of a customer."""
        return await self._act(
            session,
            "customer_relationship_manager_update_customer",
            customer_id=customer_id,
            field=field,
            new_value=new_value,
        )

    @tool
    async def customer_relationship_manager_add_customer(
        self,
        session: Session,
        customer_name: Text,
        assigned_to_email: Text,
        status: Text,
        customer_email: Text | None = None,
        customer_phone: Text | None = None,
        last_contact_date: Moment | None = None,
        product_interest: Text | None = None,
        notes: LongText | None = None,
        follow_up_by: Moment | None = None,
    ) -> Any:
        """Adds a customer; answers its id."""
        return await self._act(
            session,
            "customer_relationship_manager_add_customer",
            customer_name=customer_name,
            assigned_to_email=assigned_to_email,
            status=status,
            customer_email=customer_email,
            customer_phone=customer_phone,
            last_contact_date=last_contact_date,
            product_interest=product_interest,
            notes=notes,
            follow_up_by=follow_up_by,
        )

    @tool
    async def customer_relationship_manager_delete_customer(self, session: Session, customer_id: Text) -> Any:
        """Deletes a customer."""
        return await self._act(
            session, "customer_relationship_manager_delete_customer", customer_id=customer_id
        )
