"""PodGroup, Workload and Pod (spec.schedulingGroup) rules of scheduling.k8s.io/v1beta1."""
