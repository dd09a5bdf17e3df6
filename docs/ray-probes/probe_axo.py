import sys, time, json, io, zipfile, hashlib, pathlib
sys.path.insert(0, ".")
import httpx2 as httpx
from tests import ray_support as rs
rs.ray_executable = lambda: "/tmp/ray42/axo/bin/ray"
job = pathlib.Path("/tmp/ray42/axojob")
t0 = time.monotonic()
def log(*a): print(f"[{time.monotonic()-t0:6.1f}s]", *a, flush=True)
with rs.ray_cluster(workers=1) as c:
    B = c.dashboard_url; cl = httpx.Client(timeout=30)
    log("cluster up", B)
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        for f in ["cfg_cluster.yml", "shim_job.py", "ob_cpu_hook.py", "train.jsonl"]:
            z.write(job / f, f)
    name = f"_ray_pkg_{hashlib.sha1(b.getvalue()).hexdigest()[:16]}.zip"
    cl.get(f"{B}/api/packages/gcs/{name}"); cl.put(f"{B}/api/packages/gcs/{name}", content=b.getvalue()).raise_for_status()
    body = {"entrypoint": "python shim_job.py cfg_cluster.yml", "submission_id": "axo-1", "entrypoint_num_cpus": 0,
            "runtime_env": {"working_dir": f"gcs://{name}", "worker_process_setup_hook": "ob_cpu_hook.patch",
                            "env_vars": {"AXOLOTL_DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}}}
    log("submit", cl.post(f"{B}/api/jobs/", json=body).text)
    last = None
    while True:
        st = cl.get(f"{B}/api/jobs/axo-1").json()
        if st["status"] != last: log(st["status"]); last = st["status"]
        if st["status"] in ("SUCCEEDED", "FAILED", "STOPPED") or time.monotonic() - t0 > 480: break
        time.sleep(2)
    logs = cl.get(f"{B}/api/jobs/axo-1/logs").json()["logs"]
    pathlib.Path("/tmp/ray42/axo-cluster.log").write_text(logs)
    log("final", st["status"], repr(st["message"][:300]))
    for l in logs.splitlines():
        if "'loss'" in l or "train_runtime" in l or "Error" in l: print("   ", l[:260])
    if st["status"] == "RUNNING": cl.post(f"{B}/api/jobs/axo-1/stop")
log("down")
