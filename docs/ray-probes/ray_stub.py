import os, sys, time, ray
ray.init()
print("job_id", ray.get_runtime_context().get_job_id(), flush=True)
@ray.remote(num_cpus=1, resources={"worker1": 0.1})
def step(i):
    import socket, os
    time.sleep(1)
    return f"step {i} on node {ray.get_runtime_context().get_node_id()[:8]} pid {os.getpid()}"
for i in range(int(sys.argv[1])):
    print(ray.get(step.remote(i)), flush=True)
print("done", flush=True)
