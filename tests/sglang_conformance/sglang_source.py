"""SGLang 0.5.23 itself, as the conformance tests see it: its protocol classes imported, its source read.

The pinned wheel is installed with `--no-deps` (.ci/setup). `import sglang` runs `sglang/__init__.py`, which
imports triton (a GPU package) through `sglang.srt.utils`; the protocol module and the embedding registry do
not need it. So `protocol()` registers the `sglang` package from its real spec without executing its
`__init__.py`, and imports `sglang.srt.entrypoints.openai.protocol` (the real module, unchanged) through it.
Facts that live in code that cannot be imported here (http_server.py, tokenizer_manager.py, models/*.py all
import CUDA-only packages) are read from the source with `ast`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import Any

PINNED_VERSION = "0.5.23"


@cache
def package_dir() -> Path:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the sglang wheel is not installed: pip install --no-deps sglang==0.5.23")
    version = importlib.metadata.version("sglang")
    if version != PINNED_VERSION:
        raise RuntimeError(f"sglang {version} is installed; the conformance tests pin {PINNED_VERSION}")
    return Path(next(iter(spec.submodule_search_locations)))


def _bare_package() -> None:
    """Register the `sglang` package from its real spec without running its `__init__.py` (which needs
    triton); submodules then import from the wheel as usual."""
    if "sglang" not in sys.modules:
        package_dir()
        spec = importlib.util.find_spec("sglang")
        if spec is None:
            raise RuntimeError("the sglang wheel is not installed")
        sys.modules["sglang"] = importlib.util.module_from_spec(spec)


@cache
def protocol() -> Any:
    """`sglang.srt.entrypoints.openai.protocol`: EmbeddingResponse, ClassifyResponse, ScoringResponse, ..."""
    _bare_package()
    return importlib.import_module("sglang.srt.entrypoints.openai.protocol")


@cache
def embedding_registry() -> Any:
    """`srt/configs/embedding_model_spec.py`: which embedding architecture is pooled how.

    Its package `sglang.srt.configs` imports triton, the file itself only the standard library: it is loaded
    on its own, from the wheel's file."""
    path = package_dir() / "srt/configs/embedding_model_spec.py"
    spec = importlib.util.spec_from_file_location("sglang_embedding_model_spec", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@cache
def source(relpath: str) -> ast.Module:
    return ast.parse((package_dir() / relpath).read_text(), filename=relpath)


HTTP_SERVER = "srt/entrypoints/http_server.py"
SERVING_BASE = "srt/entrypoints/openai/serving_base.py"
SERVING_EMBEDDING = "srt/entrypoints/openai/serving_embedding.py"
TOKENIZER_MANAGER = "srt/managers/tokenizer_manager.py"


def health_check_timeout_s() -> int:
    """`HEALTH_CHECK_TIMEOUT = int(os.getenv("SGLANG_HEALTH_CHECK_TIMEOUT", 20))` in http_server.py."""
    for node in source(HTTP_SERVER).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "HEALTH_CHECK_TIMEOUT" for t in node.targets
        ):
            default = node.value.args[0].args[1]  # type: ignore[attr-defined]
            return int(ast.literal_eval(default))
    raise AssertionError("HEALTH_CHECK_TIMEOUT not found in http_server.py")


def _function(module: ast.Module, name: str) -> ast.AsyncFunctionDef | ast.FunctionDef:
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    raise AssertionError(f"{name} not found")


def routes() -> dict[str, list[str]]:
    """Path -> handler names of every `@app.get/post/api_route(path)` in http_server.py."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(source(HTTP_SERVER)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for dec in node.decorator_list:
            if (
                isinstance(dec, ast.Call)
                and isinstance(dec.func, ast.Attribute)
                and isinstance(dec.func.value, ast.Name)
                and dec.func.value.id == "app"
                and dec.args
                and isinstance(dec.args[0], ast.Constant)
            ):
                out.setdefault(str(dec.args[0].value), []).append(node.name)
    return out


def handler_awaits(path: str) -> bool:
    """Whether any handler of `path` in http_server.py awaits anything (one that does not answers at once)."""
    handlers = [_function(source(HTTP_SERVER), name) for name in routes()[path]]
    return any(isinstance(node, ast.Await) for fn in handlers for node in ast.walk(fn))


def health_sleeps_before_answering() -> bool:
    """Whether `health_generate` awaits `asyncio.sleep(1)` before it can answer 200."""
    fn = _function(source(HTTP_SERVER), "health_generate")
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "sleep"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, int | float)
            and node.args[0].value >= 1
        ):
            return True
    return False


def _dict_keys(node: ast.Dict) -> set[str]:
    return {str(k.value) for k in node.keys if isinstance(k, ast.Constant)}


def meta_info_keys() -> tuple[set[str], set[str]]:
    """(keys every meta_info has, keys a generation's meta_info adds) from tokenizer_manager.py.

    The first is the `meta_info = {...}` literal; the second the `meta_info.update({...})` for outputs that
    are not `BatchEmbeddingOutput`, plus `e2e_latency`, set once the request finished.
    """
    common: set[str] = set()
    generation: set[str] = set()
    for node in ast.walk(source(TOKENIZER_MANAGER)):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "meta_info" for t in node.targets)
            and isinstance(node.value, ast.Dict)
            and "finish_reason" in _dict_keys(node.value)
        ):
            common |= _dict_keys(node.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "meta_info"
            and node.args
            and isinstance(node.args[0], ast.Dict)
            and "completion_tokens" in _dict_keys(node.args[0])
        ):
            generation |= _dict_keys(node.args[0])
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Subscript)
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id == "meta_info"
            and isinstance(node.targets[0].slice, ast.Constant)
            and node.targets[0].slice.value == "e2e_latency"
        ):
            common.add("e2e_latency")
    if not common or not generation:
        raise AssertionError("meta_info construction not found in tokenizer_manager.py")
    return common, generation


def model_info_keys() -> set[str]:
    """Keys of the dict `/model_info` returns (http_server.py `model_info`)."""
    fn = _function(source(HTTP_SERVER), "model_info")
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            return _dict_keys(node.value)
    raise AssertionError("model_info result not found")


def native_error_shape() -> dict[str, Any]:
    """The body `_create_error_response` builds for a ValueError on a native route, with `str(e)` as "m"."""
    fn = _function(source(HTTP_SERVER), "_create_error_response")
    for node in ast.walk(fn):
        if isinstance(node, ast.Dict) and _dict_keys(node) == {"error"}:
            inner = node.values[0]
            if isinstance(inner, ast.Dict):
                return {"error": dict.fromkeys(_dict_keys(inner), "m")}
    raise AssertionError("_create_error_response body not found")


# Keys `/server_info` adds to the server args (http_server.py `server_info`, utils `build_server_info`), and
# the one block of our own the CPU server adds (documented in docs/model_server.md).
SERVER_INFO_EXTRA_KEYS = frozenset(
    {
        "internal_states",
        "version",
        "startup_time",
        "frontend",
        "launch_command",
        "kv_events",
        "max_total_num_tokens",  # scheduler info
        "rewardfleet",
    }
)


@cache
def server_args_fields() -> frozenset[str]:
    """Field names of SGLang's server args (`srt/arg_groups/fields/*.py`, assembled into `ServerArgs`), which
    `/server_info` reports by name."""
    names: set[str] = set()
    for path in sorted((package_dir() / "srt/arg_groups/fields").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    if "model_path" not in names:
        raise AssertionError("server args fields not found")
    return frozenset(names)


def v1_loads_routes() -> set[str]:
    """Paths of `@router.get(...)` in srt/entrypoints/v1_loads.py."""
    out: set[str] = set()
    for node in ast.walk(source("srt/entrypoints/v1_loads.py")):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
    return out


def _handler_for(exception_name: str) -> ast.AsyncFunctionDef:
    """The function registered with `@app.exception_handler(<exception_name>)` in http_server.py."""
    for node in ast.walk(source(HTTP_SERVER)):
        if isinstance(node, ast.AsyncFunctionDef):
            for dec in node.decorator_list:
                if (
                    isinstance(dec, ast.Call)
                    and isinstance(dec.func, ast.Attribute)
                    and dec.func.attr == "exception_handler"
                    and isinstance(dec.args[0], ast.Name)
                    and dec.args[0].id == exception_name
                ):
                    return node
    raise AssertionError(f"no exception handler for {exception_name} in http_server.py")


def _fallback_error_response(handler: ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """Keyword arguments of the handler's last `ErrorResponse(...)` call: the shape every route not special-
    cased (/v1/messages, /v1/responses, /v1/systemone) gets, native routes included."""
    calls = [
        n
        for n in ast.walk(handler)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "ErrorResponse"
    ]
    if not calls:
        raise AssertionError(f"{handler.name} builds no ErrorResponse")
    last = max(calls, key=lambda c: c.lineno)
    return {kw.arg: kw.value for kw in last.keywords if kw.arg is not None}


def validation_error_fields() -> dict[str, Any]:
    """`type` and `code` of the `ErrorResponse` SGLang's RequestValidationError handler answers, evaluated
    from their source (`HTTPStatus.BAD_REQUEST.phrase`, `HTTPStatus.BAD_REQUEST.value`)."""
    kwargs = _fallback_error_response(_handler_for("RequestValidationError"))
    return {key: _http_status_attr(kwargs[key]) for key in ("type", "code")}


def _http_status_attr(node: ast.expr) -> Any:
    """Evaluate `HTTPStatus.<MEMBER>.<attr>` without eval."""
    import http

    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "HTTPStatus"
    ):
        raise AssertionError(f"not HTTPStatus.X.y: {ast.unparse(node)}")
    return getattr(http.HTTPStatus[node.value.attr], node.attr)


def http_exception_type_is_status_code() -> bool:
    """Whether the HTTPException handler's ErrorResponse sets `type=str(exc.status_code)`."""
    kwargs = _fallback_error_response(_handler_for("HTTPException"))
    return ast.unparse(kwargs["type"]) == "str(exc.status_code)"


def generate_contract_body() -> str:
    """The `content=` of the 400 `generate_request` answers when `generate_contract_error` refuses a body,
    unparsed (expected: `{'error': contract_error}`, the error text as a bare string)."""
    fn = _function(source(HTTP_SERVER), "generate_request")
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "ORJSONResponse"
        ):
            for kw in node.keywords:
                if kw.arg == "content":
                    return ast.unparse(kw.value)
    raise AssertionError("generate_request answers no ORJSONResponse")


def generate_contract_error(body: Any) -> str | None:
    """What SGLang's own JSON-contract gate (`sglang.api.v1.api_types`, pure Python + msgspec) says about a
    `/generate` body: the exact text it sends, or None if the body passes."""
    _bare_package()
    api_types = importlib.import_module("sglang.api.v1.api_types")
    try:
        api_types.GenerateRequest.from_json_value(body)
    except api_types.JsonContractError as exc:
        return str(exc)
    return None


def serving_error_default_type() -> str:
    """The default `err_type` of `OpenAIServingBase.create_error_response`: what a /v1/* request refused by
    the serving layer (`_validate_request`, a ValueError from the tokenizer manager) carries as `type`."""
    fn = _function(source(SERVING_BASE), "create_error_response")
    names = [a.arg for a in fn.args.args]
    defaults = dict(zip(names[len(names) - len(fn.args.defaults) :], fn.args.defaults, strict=True))
    value = ast.literal_eval(defaults["err_type"])
    if not isinstance(value, str):
        raise AssertionError(f"err_type default is {value!r}")
    return value


def validate_request_messages(relpath: str) -> set[str]:
    """The messages `_validate_request` of a serving class returns (string constants in `return`s)."""
    fn = _function(source(relpath), "_validate_request")
    return {
        node.value.value
        for node in ast.walk(fn)
        if isinstance(node, ast.Return)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
