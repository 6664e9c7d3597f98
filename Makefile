# make install / make uninstall: see scripts/install for PREFIX and DESTDIR.
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: install uninstall test
install:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install
uninstall:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install --uninstall
test:
	scripts/test
