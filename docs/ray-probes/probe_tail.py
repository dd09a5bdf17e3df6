"""Probe: submit a Ray job over HTTP and follow its logs from trio (websocket and State API)."""
import json, sys, time
import httpx2 as httpx, trio
from trio_websocket import open_websocket_url

BASE = sys.argv[1]
PKG = sys.argv[2]
SID = sys.argv[3]
N = sys.argv[4] if len(sys.argv) > 4 else "6"

async def ws_tail(t0):
    url = BASE.replace("http://", "ws://") + f"/api/jobs/{SID}/logs/tail"
    async with open_websocket_url(url) as ws:
        while True:
            try:
                msg = await ws.get_message()
            except Exception as e:
                print(f"[ws {time.monotonic()-t0:5.2f}s] closed: {type(e).__name__} {e}")
                return
            print(f"[ws {time.monotonic()-t0:5.2f}s] frame {msg!r}")

async def state_follow(client, t0):
    # State API log endpoint: plain HTTP, chunked, follow=true keeps it open.
    params = {"submission_id": SID, "lines": "1000", "follow": "true"}
    try:
        async with client.stream("GET", f"{BASE}/api/v0/logs/file", params=params, timeout=httpx.Timeout(5, read=None)) as r:
            print(f"[state] status {r.status_code} headers {dict(r.headers)}")
            async for chunk in r.aiter_bytes():
                print(f"[state {time.monotonic()-t0:5.2f}s] chunk {chunk[:200]!r}")
    except Exception as e:
        print(f"[state] {type(e).__name__}: {e}")

async def main():
    async with httpx.AsyncClient() as client:
        body = {"entrypoint": f"python ray_stub.py {N}", "submission_id": SID,
                "runtime_env": {"working_dir": f"gcs://_ray_pkg_{PKG}.zip", "env_vars": {"OB_RUN": SID}},
                "entrypoint_num_cpus": 0, "metadata": {"overbrainer_run": SID}}
        r = await client.post(f"{BASE}/api/jobs/", json=body)
        print("submit", r.status_code, r.text)
        t0 = time.monotonic()
        async with trio.open_nursery() as n:
            n.start_soon(ws_tail, t0)
            n.start_soon(state_follow, client, t0)
            while True:
                r = await client.get(f"{BASE}/api/jobs/{SID}")
                st = r.json()
                print(f"[poll {time.monotonic()-t0:5.2f}s] {st['status']} job_id={st['job_id']}")
                if st["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
                    break
                await trio.sleep(1)
            await trio.sleep(2)
            n.cancel_scope.cancel()
        print("final", json.dumps(st, indent=1))
        r = await client.get(f"{BASE}/api/jobs/")
        print("list", r.status_code, "type", type(r.json()).__name__, "n", len(r.json()), "keys", sorted(r.json()[0]))

trio.run(main)
