"""`python -m rewardfleet.services.gateway`: the gateway command alone (the same as `rewardfleet gateway`)."""

import typer

from rewardfleet.services.gateway.cli import gateway

if __name__ == "__main__":
    typer.run(gateway)
