"""One module per `hdlc` subcommand (see qwengpu.cli)."""
