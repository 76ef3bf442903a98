# Tells the cuDNN loader where pip wheels live (sys.path), once per process;
# opens nothing. Called before anything that may need cuDNN.
cdef register_wheel_dirs()
