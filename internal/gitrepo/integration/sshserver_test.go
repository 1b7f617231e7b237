package integration

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshGitServer serves the git server's repositories over SSH on loopback: public-key auth
// with one client key, and for each session an exec of git-upload-pack run by Debian's git.
type sshGitServer struct {
	ln net.Listener
	// addr is host:port; knownHosts its known_hosts line; otherKnownHosts a line for the same
	// address with another key (a server that is not the one expected).
	addr, knownHosts, otherKnownHosts string
	// clientKey is the PEM (OpenSSH format) private key the server accepts.
	clientKey []byte
}

func newSigner() (ssh.Signer, ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	s, err := ssh.NewSignerFromKey(priv)
	return s, priv, err
}

func startSSHServer(reposRoot string) (*sshGitServer, error) {
	host, _, err := newSigner()
	if err != nil {
		return nil, err
	}
	other, _, err := newSigner()
	if err != nil {
		return nil, err
	}
	client, clientPriv, err := newSigner()
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		return nil, err
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(key.Marshal(), client.PublicKey().Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown public key")
	}}
	cfg.AddHostKey(host)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	s := &sshGitServer{ln: ln, addr: addr, clientKey: pem.EncodeToMemory(block),
		knownHosts:      knownhosts.Line([]string{knownhosts.Normalize(addr)}, host.PublicKey()) + "\n",
		otherKnownHosts: knownhosts.Line([]string{knownhosts.Normalize(addr)}, other.PublicKey()) + "\n"}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(conn, cfg, reposRoot)
		}
	}()
	return s, nil
}

func (s *sshGitServer) stop() { _ = s.ln.Close() }

func (s *sshGitServer) url(name string) string {
	return fmt.Sprintf("ssh://git@%s/public/%s.git", s.addr, name)
}

func serveSSH(conn net.Conn, cfg *ssh.ServerConfig, reposRoot string) {
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		_ = conn.Close()
		return
	}
	defer func() { _ = sconn.Close() }()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go serveSession(ch, chReqs, reposRoot)
	}
}

// serveSession runs `git upload-pack` for an exec request "git-upload-pack '/dir/name.git'".
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request, reposRoot string) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" {
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		verb, arg, _ := strings.Cut(payload.Command, " ")
		repoPath := path.Clean("/" + strings.Trim(arg, "'\""))
		if verb != "git-upload-pack" {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		fetches.record(repoPath)
		cmd := exec.Command("git", "upload-pack", filepath.Join(reposRoot, filepath.FromSlash(repoPath)))
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		stdin, err := cmd.StdinPipe()
		status := uint32(0)
		if err == nil {
			go func() { _, _ = io.Copy(stdin, ch); _ = stdin.Close() }()
			err = cmd.Run()
		}
		if err != nil {
			status = 1
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}
