"""Run as a child interpreter: the address NeMo Gym's own code sends a resources server's `/verify` to.

    python resolve_address.py WHEEL CONFIG.yaml SERVER HOST PORT

Loads CONFIG.yaml with OmegaConf, merged after NeMo Gym's own policy model config for training
(`responses_api_models/vllm_model/configs/vllm_model_for_training.yaml`, as NeMo RL's `config_paths` list it,
with the `policy_*` values a user's env.yaml gives it); overrides SERVER's host and port as a `++` override on
NeMo Gym's command line would; runs NeMo Gym's config validation (`GlobalConfigDictParser`: server
references, host/port defaults for the other servers); prints the URL NeMo Gym's `ServerClient` builds for
`POST /verify` to SERVER. Its `_build_server_base_url` is taken from `nemo_gym/server_utils.py` by its source
(importing that module pulls in profiling and session packages not installed here). Needs verl's antlr4 4.9
first on PYTHONPATH (omegaconf's grammar).
"""

from __future__ import annotations

import ast
import sys
import zipfile
from typing import Any


def _base_url_builder(wheel: str) -> Any:
    """`ServerClient._build_server_base_url` from NeMo Gym's source, as a plain function of (self, config)."""
    with zipfile.ZipFile(wheel) as zf:
        tree = ast.parse(zf.read("nemo_gym/server_utils.py").decode())
    client = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServerClient")
    method = next(
        n for n in client.body if isinstance(n, ast.FunctionDef) and n.name == "_build_server_base_url"
    )
    method.returns = None
    for arg in method.args.args:
        arg.annotation = None
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module([method], []), "server_utils.py", "exec"), namespace)
    return namespace["_build_server_base_url"]


def main() -> int:
    wheel, config_path, server, host, port = sys.argv[1:6]
    sys.path.insert(0, wheel)
    from nemo_gym.global_config import GlobalConfigDictParser, get_first_server_config_dict
    from omegaconf import OmegaConf

    with zipfile.ZipFile(wheel) as zf:
        model = zf.read("responses_api_models/vllm_model/configs/vllm_model_for_training.yaml").decode()
    # what a user's env.yaml gives the model config (its ${policy_...} interpolations)
    policy = {
        "policy_base_url": "http://policy:8000/v1",
        "policy_api_key": "-",
        "policy_model_name": "policy",
    }
    config = OmegaConf.merge(OmegaConf.create(policy), OmegaConf.create(model), OmegaConf.load(config_path))
    inner = next(iter(next(iter(config[server].values())).values()))
    inner.host, inner.port = host, int(port)
    parser = GlobalConfigDictParser()
    instances = parser.filter_for_server_instance_configs(config)
    parser.validate_and_populate_defaults(instances, "10.9.9.9", 20001, 30000)
    base = _base_url_builder(wheel)(None, get_first_server_config_dict(config, server))
    print(f"{base}/verify")
    return 0


if __name__ == "__main__":
    sys.exit(main())
