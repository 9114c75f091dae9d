"""External pools (`external_pools.<name>`): OpenAI-compatible endpoints outside the fleet.

OpenAI-compatible endpoints outside the fleet, forwarded to with their own rate limits and spend
(`external_pools`), and the config section `pools:` (`config`: routers, external pools, the shared client's
connections)."""
