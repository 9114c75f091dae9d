"""Running untrusted programs for the `code` reward. See docs/reward_fns.md ("Code rewards").

`harness` runs inside the sandbox; two backends run it: `bubblewrap` (locally) and `fusion` (a Sandbox Fusion
service on a cluster); `slots` bounds how many run at once, `settings` holds their knobs and `errors` their
typed failures; `outcome` derives a test case's outcome from what the host observed, and `apps_compare`
applies verl's prime_code pass/fail rules outside the sandbox; `zygote` (inside) and `zygote_run` (the host's
side) run a pass's cases in one warm sandbox, each case a fresh fork in fresh namespaces; `host_check` names
the host setting that keeps bubblewrap from working (seccomp, user namespaces, AppArmor, a masked /proc)."""
