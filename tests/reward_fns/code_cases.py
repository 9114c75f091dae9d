"""Generated code-reward cases: programs × apps-style test cases, covering prime_code's edge cases.

Each case is `(completion, ground_truth)`. Programs finish quickly (no timeouts here: verl's prime_code
hard-codes 5 s and 10 s per case, which the parity test cannot afford; timeouts have their own tests).
"""

from __future__ import annotations

import json
import random
from typing import Any

# stdin problem: read n numbers (one per line after a count) and print their sum.
SUM_CASES: dict[str, Any] = {
    "inputs": ["2\n1\n2\n", "3\n1\n2\n3\n", "1\n-5\n", "4\n10\n20\n30\n40\n"],
    "outputs": ["3\n", "6\n", "-5\n", "100\n"],
}
SUM_PROGRAMS = (
    "n=int(input())\nprint(sum(int(input()) for _ in range(n)))",
    "import sys\ndata=sys.stdin.read().split()\nprint(sum(map(int,data[1:])))",
    "import sys\nn=int(sys.stdin.readline())\nprint(sum(int(sys.stdin.readline()) for _ in range(n)))",
    "n=int(stdin.readline())\nprint(sum(int(stdin.readline()) for _ in range(n)))",
    "data=open(0).read().split()\nprint(sum(map(int,data[1:])))",
    "import sys\nlines=sys.stdin.readlines()\nprint(sum(int(x) for x in lines[1:] if x.strip()))",
    "def main():\n    n=int(input())\n    print(sum(int(input()) for _ in range(n)))\n"
    "if __name__ == '__main__':\n    main()",
    "n=int(input())\nprint(  sum(int(input()) for _ in range(n)), '  ')",
    "n=int(input())\nprint()\nprint(sum(int(input()) for _ in range(n)))\nprint()",
    "n=int(input())\nprint(float(sum(int(input()) for _ in range(n))) + 1e-7)",
    "n=int(input())\nprint(float(sum(int(input()) for _ in range(n))) + 0.5)",
    "n=int(input())\ns=sum(int(input()) for _ in range(n))\nprint(s if s < 50 else s + 1)",
    "n=int(input())\nprint(sum(int(input()) for _ in range(n)))\nimport sys\nsys.exit(0)",
    "n=int(input())\nprint(sum(int(input()) for _ in range(n)))\nexit()",
    "print(1)",
    "raise ValueError('boom')",
    "n=int(input()\nprint(n)",
    "import os",
    "print(int(sqrt(int(input())**2)) * 0 + 3)",
    "n=int(input())\nprint('%.3f' % sum(int(input()) for _ in range(n)))",
    "import subprocess\nprint(3)",
    "import os\nprint(os.getcwd())",
    "s=0\nfor line in open(0):\n    s+=1\nprint(s)",
    "x = '''a\nb'''\nn=int(input())\nprint(sum(int(input()) for _ in range(n)))",
)
# Multi-line output and list-form outputs.
LINES_CASES: dict[str, Any] = {
    "inputs": ["3\n", ["2"], "1\n"],
    "outputs": ["1\n2\n3\n", ["1", "2"], "1"],
}
LINES_PROGRAMS = (
    "n=int(input())\nfor i in range(1,n+1): print(i)",
    "n=int(input())\nprint(' '.join(str(i) for i in range(1,n+1)))",
    "n=int(input())\nfor i in range(1,n+1): print(' ', i, ' ')",
    "n=int(input())\nprint('\\n\\n'.join(str(i) for i in range(1,n+1)))",
    "n=int(input())\nprint('\\r\\n'.join(str(i) for i in range(1,n+1)))",
    "n=int(input())\nfor i in range(1,n+1): print(f'{i}.0')",
    "n=int(input())\nfor i in range(1,n+1): print(f'0{i}')",
)
# Call-based problems.
CALL_CASES: dict[str, Any] = {
    "fn_name": "solve",
    "inputs": ["1\n2", "[1, 2]\n3", "5\n5"],
    "outputs": ["3", "[[4, 5]]", "10"],
}
CALL_PROGRAMS = (
    "def solve(a, b):\n    return a + b if isinstance(a, int) else [x + b for x in a]",
    "def solve(a, b):\n    return a + b if isinstance(a, int) else tuple(x + b for x in a)",
    "def solve(a, b):\n    return a + b if isinstance(a, int) else [(x + b,) for x in a]",
    "def solve(a, b):\n    return a + b if isinstance(a, int) else {x + b for x in a}",
    "def solve(a, b):\n    return a - b",
    "def solve(a, b):\n    raise RuntimeError('no')",
    "def other(a, b):\n    return a + b",
    "class Solution:\n    def solve(self, a, b):\n"
    "        return a + b if isinstance(a, int) else [x + b for x in a]",
    "def solve(a, b):\n    print(a + b)\n    return a + b if isinstance(a, int) else [x + b for x in a]",
    "def solve(a, b):\n    return float(a + b) if isinstance(a, int) else [x + b for x in a]",
    "def solve(a, b):\n    return True if a == 1 else [x + b for x in a] if isinstance(a, list) else 10",
)
DICT_CASES: dict[str, Any] = {
    "fn_name": "invert",
    "inputs": ['{"1": "a", "2": "b"}', '{"3": "c"}'],
    "outputs": ['{"a": 1, "b": 2}', '[{"c": 3}]'],
}
DICT_PROGRAMS = (
    "def invert(d):\n    return {v: k for k, v in d.items()}",
    "def invert(d):\n    return {v: str(k) for k, v in d.items()}",
    "def invert(d):\n    return [{v: k for k, v in d.items()}]",
)
EMPTY_CASES: dict[str, Any] = {"inputs": [], "outputs": []}
EMPTY_PROGRAMS = ("print(1)", "x = (", "import os")


def _wrap(program: str, style: int) -> str:
    if style == 0:
        return program
    if style == 1:
        return f"Here is my solution:\n```python\n{program}\n```\nDone."
    return f"```python\nprint('draft')\n```\nBetter:\n```python\n{program}\n```"


def cases(seed: int = 17) -> list[tuple[str, Any]]:
    rng = random.Random(seed)
    out: list[tuple[str, Any]] = []
    for problem, programs in (
        (SUM_CASES, SUM_PROGRAMS),
        (LINES_CASES, LINES_PROGRAMS),
        (CALL_CASES, CALL_PROGRAMS),
        (DICT_CASES, DICT_PROGRAMS),
        (EMPTY_CASES, EMPTY_PROGRAMS),
    ):
        for program in programs:
            truth: Any = problem if rng.random() < 0.5 else json.dumps(problem)
            out.append((_wrap(program, rng.randrange(3)), truth))
    return out
