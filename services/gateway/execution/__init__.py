"""Running user code: loading it, and the sync process pool and its workers.

`loader` resolves `mod:fn` / `file.py:fn` (content-addressed module names), `pool` is the gateway's side of
the sync process pool, `worker` and `isolation` what runs inside a worker process, `results` turns a return
value into `(score, extra)` (`components` checks its `reward_components`), `tokenizer` loads the reward
model's tokenizer, `dropin` lets a drop-in folder's files import their sibling helpers by plain name,
`chunking` sizes the pool's tasks by each function's measured cost, `contain` keeps user code's
non-`Exception` raises in its sample, `config` is the `sync_pool:` section (workers, memory limit, chunking)
and the `loading:` one (where functions come from, the tokenizer).

Nothing here imports FastAPI or the rest of the gateway: worker processes import it on start-up."""
