"""A python grader whose import leaves a mark: the file `<this file>.imported`, holding whether the
process's environment was readable (what inline code could steal)."""

from pathlib import Path

Path(__file__ + ".imported").write_text(str(len(__import__("os").environ)))


def grade(sample, item):
    return 1.0 if item["ground_truth"] in sample["output_text"] else 0.0
