"""The judge family: how a response is judged, shared by the judge built-ins (`judge`, `rule_then_judge`,
`step_judge`, `prm`, `reward_model`, ...).

judge            the LLM judge's `compute_score` (verdict, probability; guards, images)
rule_then_judge  a rule first, the judge only for a rule-verified answer (FAPO)
settings         the judge's settings objects (generation, verdict)
templates        judge prompt templates and chat rendering
verdicts         verdict kinds and their parsing; verdict_grammar: the constrained-decoding regex
guards           checks against answers crafted for the judge
images           images of a sample in the judge's chat
answer_match     comparing an extracted answer with the reference
answers          answer extraction and normalisation, shared with the rule built-ins; options: a sample's
                 per-call options
steps            step splitting, per-step scores and their aggregation
"""
