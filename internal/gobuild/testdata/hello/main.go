// Command hello is what TestCommandBuildsStatic builds: it imports net and
// os/user, the two standard packages that use cgo when it is on.
package main

import (
	"fmt"
	"net"
	"os/user"
)

func main() {
	_, err := user.Current()
	fmt.Println(net.IPv4len, err == nil)
}
