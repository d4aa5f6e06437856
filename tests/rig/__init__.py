"""The upstream test rig: real etcd, kube-apiserver, kube-scheduler, kube-controller-manager and
kubectl 1.37 beside `dra-webhook serve`.

Built from the pinned Go modules in `upstream/` (`make upstream`), started on loopback on free
ports, stopped by pid. `make sandbox` and the pytest fixtures of `tests/e2e/` and
`tests/differential/` are the same code:

  procs.py     start and stop processes (process groups, logs, free ports)
  pki.py       the rig's CA, serving and client certificates, the service-account key
  cluster.py   etcd + kube-apiserver with chosen feature gates; kubeconfigs; kubectl; the client
  control.py   kube-scheduler + kube-controller-manager of an apiserver (optional); kubelet-less Nodes
  rest.py      a keep-alive REST client for bulk writes (what kubectl would send, without its start-up)
  sandbox.py   a cluster plus the webhook registered from the Helm chart; `python -m tests.rig.sandbox`
"""
