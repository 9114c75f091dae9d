"""gym_mirror's two sources give the pinned commit's bytes or nothing: the committed manifest is the
snapshot's, a wheel file is taken only when its blob id is the pinned one, and what it refuses says why."""

from __future__ import annotations

import pytest

from tests.nemo_gym import gym_mirror, pin_manifest

ROLLOUTS = "resources_servers/{}/data/example_rollouts.jsonl"


def test_the_committed_manifest_is_the_snapshots() -> None:
    if (why_not := gym_mirror.missing()) is not None:
        pytest.skip(why_not)
    assert gym_mirror.MANIFEST.read_text() == pin_manifest.render(pin_manifest.build())


def test_a_wheel_file_is_the_pinned_commits_bytes() -> None:
    with gym_mirror.skip_unavailable():
        data = gym_mirror.from_wheel(ROLLOUTS.format("mcqa"))
    assert data is not None
    assert gym_mirror.blob_id(data) == gym_mirror.pinned_blob(ROLLOUTS.format("mcqa"))
    if gym_mirror.missing() is None:
        assert data == gym_mirror.read(ROLLOUTS.format("mcqa"))


def test_a_wheel_file_of_other_bytes_or_none_is_refused_naming_it() -> None:
    with gym_mirror.skip_unavailable():
        gym_mirror.from_wheel(ROLLOUTS.format("mcqa"))  # the wheel is there
    # the wheel's copies of these differ from the pinned commit's, or are not in it
    for server, why in (("wmt_translation", "holds another version of it"), ("lc_niah", "lacks it")):
        with pytest.raises(gym_mirror.Unavailable, match=why) as refused:
            gym_mirror.from_wheel(ROLLOUTS.format(server))
        assert ROLLOUTS.format(server) in str(refused.value)


def test_the_manifest_answers_what_exists_and_refuses_what_it_does_not_cover() -> None:
    assert len(gym_mirror.manifest()["servers"]) == 114
    assert gym_mirror.exists(ROLLOUTS.format("mcqa"))
    assert not gym_mirror.exists("resources_servers/mcqa/data/no_such_file.jsonl")
    assert gym_mirror.from_wheel("resources_servers/mcqa/data/no_such_file.jsonl") is None
    assert gym_mirror.pinned_blob("resources_servers/mcqa/app.py")  # a file at the top of a server's folder
    uncovered = ("resources_servers/mcqa/tests/test_app.py", "resources_servers/nope/data/x", "README.md")
    for outside in uncovered:
        with pytest.raises(gym_mirror.Unavailable, match="does not cover it"):
            gym_mirror.pinned_blob(outside)
