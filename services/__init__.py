"""Reward Fleet services, one package each:

gateway/        `POST /score`: runs the reward functions (reward_fns/), isolated and measured
model_server/   the CPU model server speaking SGLang's HTTP API subset, with dynamic batching
fleet/          `rewardfleet up`: model servers, routers and the gateway as supervised children
environments/   the authoring API of environments (sessions, tools, verify) the gateway serves
client/         the Python client of the gateway
integrations/   trainer-side adapters (verl, TRL, slime) built on the client
rescore/        `rewardfleet score`: re-scoring rollouts already generated
sandbox/        task sandboxes: a sandbox per episode from an image (local bubblewrap, Kubernetes pods)
common/         the leaf every service uses (middlewares, HTTP helpers, redaction)
cli.py          the `rewardfleet` entry point; cli_app.py assembles each service's command
"""
