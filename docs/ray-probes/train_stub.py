import os, sys, time, socket
n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
print("start", os.environ.get("OB_RUN"), "cwd", os.getcwd(), "host", socket.gethostname(), flush=True)
print("files", sorted(os.listdir(".")), flush=True)
for i in range(n):
    print(f"step {i}", flush=True)
    time.sleep(1)
print("done", flush=True)
