"""The `rewardfleet` typer app, assembled from each service's own command.

The `rewardfleet` typer app: each service owns its command, this file assembles them; cli.py (the entry
point, `main`) runs it, after its typer-free fast path for a plain `rewardfleet score`."""

from __future__ import annotations

import typer

from rewardfleet.services.fleet.cli import status, up
from rewardfleet.services.gateway.cli import gateway
from rewardfleet.services.model_server.cli import serve_model
from rewardfleet.services.rescore.cli import score

app = typer.Typer(
    name="rewardfleet",
    help="Reward Fleet: reward gateway, CPU model servers and sglang-router pools.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("gateway")(gateway)
app.command("serve-model")(serve_model)
app.command("up")(up)
app.command("status")(status)
app.command("score")(score)
