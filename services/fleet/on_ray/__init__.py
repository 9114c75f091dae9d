"""`rewardfleet up --ray`: the fleet's parts as Ray actors that own its processes (docs/deploy.md, "On Ray").

| module | what it holds |
| --- | --- |
| `config.py` | `RayConfig`: the fleet config's `ray:` section (address, resources, restarts) |
| `children.py` | `OwnedChild`: one process owned by an actor, killed with it; readiness and port helpers |
| `actors.py` | `ReplicaActor` (one model server), `FrontActor` (gateway + a router per pool), `Directory` |
| `scaling.py` | `Scaler`: replicas following a load (bounds, target, cool-downs); the signals |
| `autoscaling.py` | the steps of `RayFleet` that add and remove replicas and gateways (drained first) |
| `engine.py` | `RayFleet`: placement groups, actors, readiness, the published address, stop on Ctrl-C |

Importing this package needs no Ray; `actors`, `autoscaling` and `engine` import it.
"""
