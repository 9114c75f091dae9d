"""The scoring path: dispatch, registry and scoring of one sample.

Which function scores a sample (`dispatch`), the loaded functions (`registry`), one call under its timeout to
a typed result (`scoring`), the version strings of everything that scores (`versioning`), the rate-limited log
line of each failed sample (`failure_log`), and the `functions.<name>` section (`config`)."""
