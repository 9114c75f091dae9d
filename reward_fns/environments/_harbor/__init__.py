"""What `harbor.py` (the Harbor environment) is made of; private to this package.

    task.py           a task folder read and checked (instruction, task.toml, Dockerfile, tests)
    image.py          a task's image: buildah over the Debian base, unpacked to a cached root file system
    build_base.sh     the Debian base: debootstrap + buildah, cached
    rewards.py        the verifier's reward files read as Harbor reads them; `VerifierFailed`
    prebuild.py       builds every shipped task's image ahead of the first session (CI's set-up)

The shipped tasks themselves are in `../harbor_tasks/`; docs/sandboxes.md, "Harbor tasks".
"""
