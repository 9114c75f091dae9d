"""Instruction checkers for the `instruction_following` built-in.

Instruction checkers for the `instruction_following` built-in: IFEval's 25 types, the IFEvalG types NeMo
Gym's instruction_following server scores, and the IFBench types that need no model. Each checker is a pure
function of the response text and the instruction's kwargs (docs/verifiable_tasks.md).

    spec.py            the instruction registry: ids, kwargs and their checks
    ifeval.py          IFEval's 25 types
    ifevalg.py         the IFEvalG types NeMo Gym's instruction_following server adds
    ifbench.py         IFBench's types (ifbench_custom.py: those with custom counting rules)
    text.py            words, sentences (Punkt shipped as code), paragraphs
"""
