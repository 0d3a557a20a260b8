echo setup "$@"
