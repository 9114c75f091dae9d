# Reward gateway: POST /score with verl-style reward functions. Build from the repo root:
#   docker build -f docker/gateway.Dockerfile -t rewardfleet/gateway .
# Mount points: /etc/rewardfleet (gateway.yaml, read with --config) and /srv/reward_fns (user functions,
# read with --reward-fns). The built-in functions ship inside the image.
FROM python:3.11.14-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    REWARDFLEET_GATEWAY_HOST=0.0.0.0 \
    REWARDFLEET_GATEWAY_PORT=8000

WORKDIR /opt/rewardfleet
# bubblewrap: the `code` built-in runs each program in its own bwrap sandbox (reward_fns/_sandbox/), and
# refuses to run code without it (SandboxUnavailable). prlimit and setpriv, which it also uses, come with
# util-linux, already in the base. Debian's bookworm package, not pinned: its security updates should land.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
# No torch here: the gateway stays light. The reward_model function renders its input with the reward model's
# tokenizer, which needs transformers (tokenizers only, no torch); WITH_TRANSFORMERS=false leaves it out.
ARG WITH_TRANSFORMERS=true
ARG TRANSFORMERS_VERSION=5.23.0
COPY pyproject.toml README.md ./
COPY services ./services
COPY router ./router
COPY reward_fns ./reward_fns
# DL3013 wants a version pin; "." is this repo itself, pinned by the build context.
# hadolint ignore=DL3013
RUN pip install --no-compile . \
    && if [ "$WITH_TRANSFORMERS" = "true" ]; then pip install --no-compile "transformers==${TRANSFORMERS_VERSION}"; fi \
    && useradd --system --uid 10001 --create-home --home-dir /home/rewardfleet rewardfleet \
    && mkdir -p /etc/rewardfleet /srv/reward_fns \
    && chown rewardfleet /srv/reward_fns

USER 10001
EXPOSE 8000

# Liveness only (/health is cheap); orchestrators gate traffic on /ready. python, since the image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('REWARDFLEET_GATEWAY_PORT', '8000'), timeout=2)"]

ENTRYPOINT ["rewardfleet"]
CMD ["gateway", "--reward-fns", "/srv/reward_fns"]
