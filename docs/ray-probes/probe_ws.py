import sys, time, hashlib, io, zipfile
sys.path.insert(0, ".")
import httpx2 as httpx, trio
from trio_websocket import open_websocket_url, ConnectionClosed
from tests import ray_support as rs
from tests.test_ray_probe import JOB_SCRIPT

async def main(B):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z: z.writestr("job.py", JOB_SCRIPT + f"# {time.time()}\n")
    name = f"_ray_pkg_{hashlib.sha1(b.getvalue()).hexdigest()[:16]}.zip"
    async with httpx.AsyncClient(timeout=10) as c:
        await c.get(f"{B}/api/packages/gcs/{name}"); await c.put(f"{B}/api/packages/gcs/{name}", content=b.getvalue())
        await c.post(f"{B}/api/jobs/", json={"entrypoint": "python job.py 5", "submission_id": "w1", "runtime_env": {"working_dir": f"gcs://{name}"}})
        t0 = time.monotonic()
        async def ws():
            async with open_websocket_url(B.replace("http", "ws") + "/api/jobs/w1/logs/tail") as w:
                n = 0
                while True:
                    try: m = await w.get_message(); n += 1
                    except ConnectionClosed as e:
                        print(f"[ws {time.monotonic()-t0:5.2f}s] closed after {n} frames: {e.reason}"); return
        async def follow():
            while True:
                st = (await c.get(f"{B}/api/jobs/w1")).json()
                if st["status"] == "RUNNING": break
                await trio.sleep(0.2)
            params = {"node_id": st["driver_node_id"], "filename": "job-driver-w1.log", "lines": "1000", "follow": "true"}
            n = 0
            async with c.stream("GET", f"{B}/api/v0/logs/file", params=params, timeout=httpx.Timeout(10, read=None)) as r:
                async for ch in r.aiter_text():
                    n += 1; print(f"[follow {time.monotonic()-t0:5.2f}s] chunk {ch[:160]!r}")
                    if "done" in ch: print(f"[follow {time.monotonic()-t0:5.2f}s] saw done after {n} chunks")
            print(f"[follow {time.monotonic()-t0:5.2f}s] stream ended after {n} chunks")
        async with trio.open_nursery() as nur:
            nur.start_soon(ws)
            nur.start_soon(follow)
            while (await c.get(f"{B}/api/jobs/w1")).json()["status"] not in ("SUCCEEDED", "FAILED"): await trio.sleep(0.2)
            print(f"[poll {time.monotonic()-t0:5.2f}s] terminal")
            with trio.move_on_after(20):
                while len(nur.child_tasks) > 0: await trio.sleep(0.5)
            print(f"[{time.monotonic()-t0:5.2f}s] still open after 20 s: {len(nur.child_tasks)} of ws/follow")
            nur.cancel_scope.cancel()

with rs.ray_cluster(workers=1) as cl:
    trio.run(main, cl.dashboard_url)
