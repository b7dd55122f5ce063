// Package phonetest holds the end-to-end tests of droidgo running on the
// phone it drives: the linux/arm64 build under qemu-aarch64 with a fake
// Android userland (device/local), and deploy, run --on-phone, attach and
// stop through Debian's adb server and the fake adbd, which runs pushed
// programs under qemu. They run droidgo as the programs a user runs, built
// once per test process, in a package of their own so that their emulated
// runs have their own time budget beside cmd/droidgo's tests.
package phonetest
