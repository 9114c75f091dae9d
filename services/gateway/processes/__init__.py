"""Several gateway processes serving one port on one host (`rewardfleet gateway --processes N`).

args.py          the command's arguments and the settings they make, the same in every process
launcher.py      starts the state server when needed, then uvicorn's N workers on one socket
worker.py        each worker's app: the CLI's settings, its metrics sockets attached
state_server.py  a supervised Redis-protocol server on a private unix socket (no state_url set)
siblings.py      each process serves its metrics on a unix socket; a scrape reads and merges them all
metrics_merge.py one exposition from N: counters and histograms add up, gauges by their policy
"""
