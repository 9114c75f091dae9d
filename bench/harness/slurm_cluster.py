"""A real Slurm on this host for the tests: munged (as user munge), slurmctld and slurmd, each with a private
folder, ports and socket, so nothing of a system Slurm is touched. Needs root, slurm-wlm and munge."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.harness.waiting import eventually

DAEMONS = ("munged", "slurmctld", "slurmd")


def missing() -> str | None:
    """Why a local Slurm cannot run here, or None."""
    if os.geteuid() != 0:
        return "a local Slurm needs root (slurmd, munged as user munge)"
    for exe in (*DAEMONS, "sbatch", "scontrol", "scancel"):
        if shutil.which(exe) is None and not Path(f"/usr/sbin/{exe}").exists():
            return f"{exe} not installed (apt-get install slurm-wlm munge)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no user munge (apt-get install munge)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalSlurm:
    root: Path
    conf: Path
    node: str

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, timeout_s: float = 60) -> str:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=self.env)
        assert proc.returncode == 0, f"{cmd}: {proc.stderr or proc.stdout}"
        return proc.stdout

    def job_state(self, job: str) -> str:
        out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, env=self.env)
        for word in out.stdout.split():
            if word.startswith("JobState="):
                return word.split("=", 1)[1]
        return "GONE"

    def pid(self, daemon: str) -> int | None:
        path = self.root / ("munge/munged.pid" if daemon == "munged" else f"{daemon}.pid")
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None


def start(cpus: int = 2) -> LocalSlurm:
    root = Path(tempfile.mkdtemp(prefix="rf-slurm-"))
    root.chmod(0o755)
    munge = root / "munge"
    for sub in ("state", "spool", "log"):
        (root / sub).mkdir()
    munge.mkdir(mode=0o711)
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    shutil.chown(munge, "munge", "munge")
    shutil.chown(key, "munge", "munge")
    munge.chmod(0o711)
    node = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(
        f"""ClusterName=rftest
SlurmctldHost={node}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={munge}/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
KillWait=30
NodeName={node} CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""
    )
    slurm = LocalSlurm(root, conf, node)
    munged = ["runuser", "-u", "munge", "--", "munged", "--force", f"--socket={munge}/munge.sock",
              f"--key-file={key}", f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
              f"--seed-file={munge}/munged.seed"]  # fmt: skip
    subprocess.run(munged, check=True, timeout=30)
    subprocess.run(["slurmctld", "-f", str(conf), "-i"], check=True, timeout=30, env=slurm.env)
    subprocess.run(["slurmd", "-f", str(conf)], check=True, timeout=30, env=slurm.env)
    eventually(
        lambda: " idle " in slurm.run("sinfo", "-h") or "idle" in slurm.run("sinfo", "-h", "-o", "%t"),
        timeout_s=60, interval_s=0.5, what="the local Slurm node idle",
        detail=lambda: (root / "log" / "slurmctld.log").read_text(errors="replace")[-2000:],
    )  # fmt: skip
    return slurm


def stop(slurm: LocalSlurm) -> None:
    """Cancel every job, stop the daemons (slurmd, slurmctld, munged) and wait until they are gone."""
    subprocess.run(["scancel", "--full", "--user=root"], env=slurm.env, capture_output=True, timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and slurm.run("squeue", "-h").strip():
        time.sleep(0.5)
    pids = [slurm.pid(d) for d in reversed(DAEMONS)]
    for pid in pids:
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
    deadline = time.monotonic() + 30
    for pid in pids:
        while pid is not None and time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
    shutil.rmtree(slurm.root, ignore_errors=True)
