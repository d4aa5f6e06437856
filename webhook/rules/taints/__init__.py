"""DeviceTaintRule: the rules of the one kind that taints devices from outside their slices."""
