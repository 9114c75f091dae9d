from __future__ import annotations

import concurrent.futures
import importlib.util
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import math_verify as math_verify_library
import pytest

from rewardfleet import reward_fns
from rewardfleet.reward_fns import math_verify
from rewardfleet.reward_fns.math_verify import GoldAnswerError, MathVerifyTimeout


def score(text: str, truth: str, **kwargs: Any) -> dict[str, Any]:
    return math_verify.compute_score(data_source="any", solution_str=text, ground_truth=truth, **kwargs)


def test_module_uses_the_library_not_itself() -> None:
    assert math_verify.__name__ == "rewardfleet.reward_fns.math_verify"
    assert math_verify.parse is math_verify_library.parse
    assert math_verify.verify is math_verify_library.verify
    assert math_verify_library.__file__ is not None and "site-packages" in math_verify_library.__file__


@pytest.mark.parametrize(
    ("text", "truth", "expected_score"),
    [
        ("The answer is $\\boxed{0.5}$.", "\\frac{1}{2}", 1.0),
        ("The answer is $\\boxed{\\dfrac{1}{2}}$.", "0.5", 1.0),
        ("so x = 5", "5", 1.0),
        ("$\\boxed{\\{2, 1\\}}$", "\\{1,2\\}", 1.0),
        ("$\\boxed{0.1}$", "10\\%", 1.0),
        ("The answer is 1,000.", "1000", 1.0),
        ("$\\boxed{2\\pi}$", "2\\pi", 1.0),
        ("$\\boxed{-3}$", "-3", 1.0),
        ("$\\boxed{7}$", "8", 0.0),
        ("$\\boxed{3}$ first, then $\\boxed{4}$", "4", 1.0),
        ("I do not know.", "5", 0.0),
        ("", "5", 0.0),
    ],
)
def test_scores_in_the_main_thread(text: str, truth: str, expected_score: float) -> None:
    got = score(text, truth)
    assert got["score"] == expected_score
    assert got["acc"] is (expected_score == 1.0)
    assert set(got) == {"score", "acc", "pred", "timed_out"}
    assert got["timed_out"] is False


def test_no_answer_has_empty_pred() -> None:
    assert score("I do not know.", "5") == {"score": 0.0, "acc": False, "pred": "", "timed_out": False}


@pytest.mark.parametrize("truth", ["", "   ", "}{"])
def test_unparsable_gold_is_an_error(truth: str) -> None:
    with pytest.raises(GoldAnswerError, match="ground truth"):
        score("\\boxed{1}", truth)


def test_timeouts_must_be_whole_seconds() -> None:
    with pytest.raises(ValueError, match="parsing_timeout_s"):
        score("1", "1", parsing_timeout_s=0)
    with pytest.raises(ValueError, match="verify_timeout_s"):
        score("1", "1", verify_timeout_s=1.5)


def _raise_timeout(*args: Any, **kwargs: Any) -> Any:
    raise math_verify_library.errors.TimeoutException("Operation timed out!")


def test_timeout_raises_unless_a_timeout_score_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_verify, "verify", _raise_timeout)
    with pytest.raises(MathVerifyTimeout, match="comparing"):
        score("\\boxed{1}", "1")
    assert score("\\boxed{1}", "1", timeout_score=-1.0) == {
        "score": -1.0,
        "acc": False,
        "pred": "",
        "timed_out": True,
    }
    monkeypatch.setattr(math_verify, "parse", _raise_timeout)
    with pytest.raises(MathVerifyTimeout, match="ground truth"):
        score("\\boxed{1}", "1")


def test_in_a_thread_it_refuses_clearly() -> None:
    outcome: list[BaseException | dict[str, Any]] = []

    def run() -> None:
        try:
            outcome.append(score("\\boxed{1}", "1"))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert isinstance(outcome[0], RuntimeError)
    assert "main thread" in str(outcome[0])


def test_in_a_thread_without_timeouts_it_works() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        got = pool.submit(score, "\\boxed{0.5}", "\\frac12", parsing_timeout_s=None, verify_timeout_s=None)
        assert got.result(timeout=60)["score"] == 1.0


def _score_in_worker(text: str, truth: str) -> dict[str, Any]:
    from rewardfleet.reward_fns.math_verify import compute_score

    return compute_score(data_source="any", solution_str=text, ground_truth=truth)


def test_in_a_spawned_worker_process() -> None:
    # The gateway runs sync functions in worker processes, whose main thread can use signal.alarm.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        right = pool.submit(_score_in_worker, "$\\boxed{0.5}$", "\\frac{1}{2}")
        wrong = pool.submit(_score_in_worker, "$\\boxed{3}$", "\\frac{1}{2}")
        assert right.result(timeout=120)["score"] == 1.0
        assert wrong.result(timeout=120)["score"] == 0.0


def test_loading_the_file_as_top_level_math_verify_fails_clearly() -> None:
    path = Path(reward_fns.__file__).parent / "math_verify.py"
    spec = importlib.util.spec_from_file_location("math_verify", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(ImportError, match="shadows"):
        spec.loader.exec_module(module)


def test_loading_the_file_by_path_under_another_name_works() -> None:
    path = Path(reward_fns.__file__).parent / "math_verify.py"
    spec = importlib.util.spec_from_file_location("user_fns_math_verify", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.compute_score(data_source="x", solution_str="\\boxed{2}", ground_truth="2")["score"] == 1.0
