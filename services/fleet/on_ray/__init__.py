"""`rewardfleet up --ray`: the fleet's parts as Ray actors that own its processes (docs/deploy.md, "On Ray").

| module | what it holds |
| --- | --- |
| `config.py` | `RayConfig`: the fleet config's `ray:` section (address, resources, restarts) |
| `children.py` | `OwnedChild`: one process owned by an actor, killed with it; readiness and port helpers |
| `actors.py` | `ReplicaActor` (one model server), `FrontActor` (gateway + a router per pool), `Directory` |
| `scaling.py` | `Scaler`: a pool's replicas following its queue (bounds, target, cool-downs) |
| `engine.py` | `RayFleet`: placement groups, actors, readiness, the published address, stop on Ctrl-C |

Importing this package needs no Ray; `actors` and `engine` import it.
"""
