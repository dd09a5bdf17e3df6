import json, time, hashlib, io, zipfile, sys
import httpx2 as httpx
sys.path.insert(0, ".")
from tests import ray_support as rs
from tests.test_ray_probe import JOB_SCRIPT

def pkg(extra):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr("job.py", JOB_SCRIPT + f"# {extra}\n")
    d = b.getvalue(); return f"_ray_pkg_{hashlib.sha1(d).hexdigest()[:16]}.zip", d

t0 = time.monotonic()
def log(*a): print(f"[{time.monotonic()-t0:6.1f}s]", *a, flush=True)
with rs.ray_cluster(workers=1) as c:
    B = c.dashboard_url; cl = httpx.Client(timeout=10)
    name, data = pkg(time.time())
    log("GET pkg", cl.get(f"{B}/api/packages/gcs/{name}").status_code, "PUT", cl.put(f"{B}/api/packages/gcs/{name}", content=data).status_code)
    cl.post(f"{B}/api/jobs/", json={"entrypoint": "python job.py 60", "submission_id": "k1", "runtime_env": {"working_dir": f"gcs://{name}"}, "entrypoint_num_cpus": 0}).raise_for_status()
    while "step 2" not in cl.get(f"{B}/api/jobs/k1/logs").json()["logs"]: time.sleep(0.3)
    w = c.nodes[1]; log("killing worker1 session", w.process.pid); rs.kill_session(w.process.pid)
    for i in range(8):
        time.sleep(2); st = cl.get(f"{B}/api/jobs/k1").json()
        nodes = [(n["node_id"][:6], n["state"]) for n in cl.get(f"{B}/api/v0/nodes").json()["data"]["result"]["result"]]
        log(st["status"], nodes, "pkg", cl.get(f"{B}/api/packages/gcs/{name}").status_code)
    log("tail:", cl.get(f"{B}/api/jobs/k1/logs").json()["logs"][-300:].replace("\n", " | "))
    import tempfile, pathlib
    args = [f"--address={c.gcs_address}", f"--temp-dir={c.temp_dir / 'worker1b'}", '--resources={"worker1": 1}', "--num-cpus=1", "--node-ip-address=127.0.0.1", f"--object-store-memory={rs.OBJECT_STORE_BYTES}", *rs.node_ports()]
    w2 = rs.start_node("worker1b", args, c.temp_dir); log("restarted worker1 as worker1b")
    try:
        while True:
            st = cl.get(f"{B}/api/jobs/k1").json()
            if st["status"] in ("SUCCEEDED", "FAILED", "STOPPED") or time.monotonic() - t0 > 150: break
            time.sleep(1)
        lg = cl.get(f"{B}/api/jobs/k1/logs").json()["logs"]
        log("final", st["status"], repr(st["message"][:300]))
        log("last lines:", " | ".join(l for l in lg.splitlines() if l.startswith("step") or "done" in l)[-400:])
        if st["status"] == "RUNNING":
            cl.post(f"{B}/api/jobs/k1/stop")
    finally:
        rs.stop_node(w2)
log("down")
