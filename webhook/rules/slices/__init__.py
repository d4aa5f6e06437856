"""ResourceSlice rules: the kind module, devices, capacity, gate strips, shared checks."""
