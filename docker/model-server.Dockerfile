# CPU model server (`rewardfleet serve-model`): SGLang's HTTP API with dynamic batching, for laptops and CI.
# GPU hosts use the official lmsysorg/sglang image instead (see deploy/docker-compose.yml).
#   docker build -f docker/model-server.Dockerfile -t rewardfleet/model-server .
# Models are never downloaded at run time: mount a checkpoint directory and pass --model-path.
FROM python:3.11.14-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    MODEL_SERVER_PORT=30000

WORKDIR /opt/rewardfleet
# torch first, from a CPU-only source: any other source pulls gigabytes of CUDA packages. Both are build
# arguments: TORCH_INDEX_URL is the index torch and its dependencies come from; TORCH_FIND_LINKS (optional) is a
# folder or URL of wheels searched too, e.g. a mounted directory holding a local CPU build:
#   buildah bud -v /opt/wheels:/opt/wheels:ro --build-arg TORCH_INDEX_URL=https://pypi.org/simple \
#     --build-arg TORCH_FIND_LINKS=/opt/wheels -f docker/model-server.Dockerfile .
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_FIND_LINKS=
# DL3013 misreads the optional --find-links expansion as an unpinned package; torch is pinned (TORCH_VERSION).
# hadolint ignore=DL3013
RUN pip install --no-compile --index-url "${TORCH_INDEX_URL}" \
        ${TORCH_FIND_LINKS:+--find-links "${TORCH_FIND_LINKS}"} "torch==${TORCH_VERSION}"
COPY pyproject.toml README.md ./
COPY services ./services
COPY router ./router
COPY reward_fns ./reward_fns
# DL3013 wants a version pin; "." is this repo itself, pinned by the build context.
# hadolint ignore=DL3013
RUN pip install --no-compile ".[model]" \
    && useradd --system --uid 10001 --create-home --home-dir /home/rewardfleet rewardfleet

USER 10001
EXPOSE 30000

# /health answers 503 until the model is loaded and warmed up. python, since the image has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('MODEL_SERVER_PORT', '30000'), timeout=4)"]

ENTRYPOINT ["rewardfleet", "serve-model"]
CMD ["--help"]
