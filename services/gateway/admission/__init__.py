"""Bounded work: admission of requests and drain on SIGTERM.

`admission` (in-flight and queued requests, 429/503) and `drain` (SIGTERM: stop taking work, finish what was
taken), `config` (their section, `admission:`)."""
