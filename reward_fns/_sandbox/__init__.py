"""Running untrusted programs for the `code` reward: a harness (run inside the sandbox), two backends
(bubblewrap locally, Sandbox Fusion on a cluster), slots, settings, typed errors, and prime_code's
pass/fail rules applied outside the sandbox. See docs/reward_fns.md ("Code rewards")."""
