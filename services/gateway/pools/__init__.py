"""External pools (`external_pools.<name>`): OpenAI-compatible endpoints outside the fleet.

External pools (`external_pools.<name>`): OpenAI-compatible endpoints outside the fleet, forwarded to with
their own rate limits and spend (`external_pools`), and their config section (`config`)."""
