"""What leaves the process: model files, SQL, the command line's JSON schemas."""
