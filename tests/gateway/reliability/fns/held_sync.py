"""Sync (a worker process): blocks on the stand-in judge at `extra_info["judge_port"]` (127.0.0.1) until it
answers, and scores the byte it answers (b"1" -> 1.0)."""

import socket


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    with socket.create_connection(("127.0.0.1", int(extra_info["judge_port"])), timeout=60) as conn:
        return float(conn.recv(1) == b"1")
