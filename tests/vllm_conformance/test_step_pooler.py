"""The STEP pooler facts our PRM runner takes from vLLM, read from the installed vLLM 0.33.0 at test time:
which PRM architectures it registers and the `step_tag_id` each gets by default, and the pooler options our
`--step-tag-id` / `--returned-token-ids` stand for."""

from __future__ import annotations

from typing import Any

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.runners.families import PROCESS_REWARD_FAMILIES


def test_prm_families_and_default_step_tags_are_vllms(vllm_facts: dict[str, Any]) -> None:
    vllm_prms = vllm_facts["prm_step_tag_ids"]
    assert vllm_prms, "vLLM registers no *ForProcessRewardModel"
    assert set(PROCESS_REWARD_FAMILIES) == set(vllm_prms)
    for arch, family in PROCESS_REWARD_FAMILIES.items():
        assert family.default_step_tag_id == vllm_prms[arch], arch


def test_our_step_options_are_vllms_pooler_options(vllm_facts: dict[str, Any]) -> None:
    assert "STEP" in vllm_facts["token_pooling_types"]
    for name in ("step_tag_id", "returned_token_ids"):
        assert name in vllm_facts["pooler_config_fields"]
        assert name in ModelServerSettings.model_fields


def test_the_docs_give_vllms_default_step_tag(vllm_facts: dict[str, Any]) -> None:
    docs = (REPO_ROOT / "docs" / "model_server.md").read_text()
    for arch, tag in vllm_facts["prm_step_tag_ids"].items():
        assert f"{tag}" in docs and arch in docs
