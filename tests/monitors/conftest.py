"""The state-store tests' real redis-server and three-replica backends, reused by the spend tests."""

from tests.gateway.state_store.conftest import redis_server, replicas

__all__ = ["redis_server", "replicas"]
