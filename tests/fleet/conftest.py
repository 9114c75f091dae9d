"""Fleet tests share the router tests' stand-in SGLang replicas (the supervisor test runs a real router)."""

from tests.router.conftest import start_replica

__all__ = ["start_replica"]
