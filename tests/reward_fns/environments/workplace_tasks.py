"""The ground truth of workplace_assistant's recorded rollouts, which the rows do not keep.

NeMo Gym recorded them from tasks of its Hugging Face dataset
(`nvidia/Nemotron-RL-agent-workplace_assistant`), not from the server's `example.jsonl` (whose five tasks
are other prompts), and no file at the pinned commit holds their `ground_truth`. Each is rebuilt here as
WorkBench answers such a prompt: the calls that do what it asks, their ids looked up in NeMo Gym's CSV
tables with the `csv` module (independently of the port), today being NeMo Gym's fixed 2023-11-30
23:59:00. A prompt no rule here reads raises LookupError.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

Row = dict[str, Any]
TODAY = datetime(2023, 11, 30, 23, 59)


def _table(folder: Path, name: str) -> list[dict[str, str]]:
    with (folder / "processed" / f"{name}.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _call(name: str, **arguments: str) -> dict[str, str]:
    return {"name": name, "arguments": json.dumps(arguments)}


def _plot_since(folder: Path, found: re.Match[str]) -> list[dict[str, str]]:
    day = datetime.strptime(f"{found['day']} {TODAY.year}", "%B %d %Y").date().isoformat()
    value = found["value"].replace(" ", "_")
    return [
        _call(
            "analytics_create_plot",
            time_min=day,
            time_max=TODAY.date().isoformat(),
            value_to_plot=value,
            plot_type=found["kind"],
        )
    ]


def _lost_proposals(folder: Path, found: re.Match[str]) -> list[dict[str, str]]:
    since = (TODAY - timedelta(weeks=int(found["weeks"]))).strftime("%Y-%m-%d %H:%M:%S")
    return [
        _call(
            "customer_relationship_manager_update_customer",
            customer_id=c["customer_id"],
            field="status",
            new_value="Lost",
        )
        for c in _table(folder, "customer_relationship_manager_data")
        if c["product_interest"].lower() == found["product"].lower()
        and c["status"] == "Proposal"
        and c["last_contact_date"] < since
    ]


def _delete_customer(folder: Path, found: re.Match[str]) -> list[dict[str, str]]:
    (customer,) = [
        c for c in _table(folder, "customer_relationship_manager_data") if c["customer_name"] == found["name"]
    ]
    return [_call("customer_relationship_manager_delete_customer", customer_id=customer["customer_id"])]


def _add_lead(folder: Path, found: re.Match[str]) -> list[dict[str, str]]:
    addresses = (folder / "raw" / "email_addresses.csv").read_text().split()
    (owner,) = [a for a in addresses if a.startswith(found["owner"].lower() + ".")]
    return [
        _call(
            "customer_relationship_manager_add_customer",
            customer_name=found["name"],
            assigned_to_email=owner,
            status="Lead",
        )
    ]


def _delete_last_email(folder: Path, found: re.Match[str]) -> list[dict[str, str]]:
    received = [
        e
        for e in _table(folder, "emails")
        if e["inbox/outbox"] == "inbox" and e["sender/recipient"].startswith(found["sender"].lower() + ".")
    ]
    last = max(received, key=lambda e: e["sent_datetime"])
    return [_call("email_delete_email", email_id=last["email_id"])]


RULES: list[tuple[str, Callable[[Path, re.Match[str]], list[dict[str, str]]]]] = [
    (r"Create a (?P<kind>bar|line) chart of (?P<value>total visits) since (?P<day>\w+ \d+)", _plot_since),
    (
        r"We need to move all customers that haven't responded to a proposal for the (?P<product>\w+) "
        r"product in (?P<weeks>\d+) weeks to lost\. Can you update the CRM\?",
        _lost_proposals,
    ),
    (r"Delete (?P<name>[A-Z]\w+ [A-Z]\w+) from the crm", _delete_customer),
    (
        r"Add (?P<name>[A-Z]\w+ [A-Z]\w+) as a new lead in the crm and assign them to (?P<owner>\w+)",
        _add_lead,
    ),
    (r"Delete my last email from (?P<sender>\w+)", _delete_last_email),
]


def ground_truth_of(folder: Path) -> Callable[[Row], Row]:
    """row -> its task ({"ground_truth": [...]}), from its prompt over the tables of `folder`."""

    def task(row: Row) -> Row:
        prompt = row["responses_create_params"]["input"][-1]["content"]
        for pattern, answer in RULES:
            found = re.fullmatch(pattern, prompt)
            if found is not None:
                return {"ground_truth": answer(folder, found)}
        raise LookupError(f"no ground-truth rule reads {prompt!r}")

    return task
