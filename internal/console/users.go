package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"

	"github.com/kura-backup/kura/internal/private"
)

// Roles of a console user. An admin may change things; an operator may
// only watch (every change answers 403).
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
)

// Errors of the user file.
var (
	ErrBadUser     = errors.New("console: bad user name or password")
	ErrUserExists  = errors.New("console: user exists")
	ErrNoSuchUser  = errors.New("console: no such user")
	ErrWrongSecret = errors.New("console: wrong name or password")
)

// UsersFile is where a server home keeps its console users.
func UsersFile(home string) string { return filepath.Join(home, "console-users.json") }

// MinPassword is the shortest password accepted.
const MinPassword = 10

// The argon2id parameters of a new hash: OWASP's second recommended set
// (19 MiB, 2 passes, 1 lane), about 30 ms a sign-in on a 2-core machine.
// They are stored with each hash, so raising them later leaves old hashes
// valid.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB
	argonThreads = 1
	argonKeyLen  = 32
)

// User is one console user as the file keeps it. Hash is
// "argon2id$v=19$m=MEM,t=TIME,p=THREADS$SALT$KEY" (base64, no padding).
type User struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Hash string `json:"hash"`
}

// Users is the user file of a home. It is read on every sign-in, so a user
// added or removed with the CLI counts at once, without a restart.
type Users struct {
	path string
	mu   sync.Mutex // one writer at a time in this process
}

// OpenUsers is the user file at path (it need not exist yet).
func OpenUsers(path string) *Users { return &Users{path: path} }

func (u *Users) load() ([]User, error) {
	b, err := os.ReadFile(u.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var us []User
	if err := json.Unmarshal(b, &us); err != nil {
		return nil, fmt.Errorf("%s: %w", u.path, err)
	}
	return us, nil
}

func (u *Users) save(us []User) error {
	b, err := json.MarshalIndent(us, "", "  ")
	if err != nil {
		return err
	}
	if err := private.MkdirAll(filepath.Dir(u.path)); err != nil {
		return err
	}
	tmp := u.path + ".tmp"
	if err := private.WriteFile(tmp, append(b, '\n')); err != nil {
		return err
	}
	return os.Rename(tmp, u.path)
}

// validName: 1 to 64 letters, digits, '.', '_', '-' and '@'.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r)) {
			return false
		}
	}
	return true
}

// Add adds a user with a password and a role (RoleAdmin or RoleOperator).
func (u *Users) Add(name, password, role string) error {
	if !validName(name) {
		return fmt.Errorf("%w: %q: a name is 1 to 64 letters, digits, '.', '_', '-' or '@'", ErrBadUser, name)
	}
	if len(password) < MinPassword {
		return fmt.Errorf("%w: the password has %d characters; at least %d", ErrBadUser, len(password), MinPassword)
	}
	if role != RoleAdmin && role != RoleOperator {
		return fmt.Errorf("%w: role %q (admin or operator)", ErrBadUser, role)
	}
	h, err := hashPassword(password)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	us, err := u.load()
	if err != nil {
		return err
	}
	if slices.ContainsFunc(us, func(x User) bool { return x.Name == name }) {
		return fmt.Errorf("%w: %s", ErrUserExists, name)
	}
	return u.save(append(us, User{Name: name, Role: role, Hash: h}))
}

// Remove removes a user; their sessions end at their next request (and
// are deleted then, or pruned once idle).
func (u *Users) Remove(name string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	us, err := u.load()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(us, func(x User) bool { return x.Name == name })
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoSuchUser, name)
	}
	return u.save(slices.Delete(us, i, i+1))
}

// List lists the users (without their hashes).
func (u *Users) List() ([]User, error) {
	us, err := u.load()
	for i := range us {
		us[i].Hash = ""
	}
	return us, err
}

// Credential is a user's role now and the stamp of their password hash
// (see stampOf), or ErrNoSuchUser.
func (u *Users) Credential(name string) (role, stamp string, err error) {
	us, err := u.load()
	if err != nil {
		return "", "", err
	}
	for _, x := range us {
		if x.Name == name {
			return x.Role, stampOf(x.Hash), nil
		}
	}
	return "", "", ErrNoSuchUser
}

// stampOf fingerprints a user's password hash (which holds a random salt):
// a session keeps the stamp of the credential it signed in with and ends
// when the user's stamp is another, so removing a user and adding them
// again with a new password ends their old sessions. Not secret, and no
// help to a guesser: a hash of the salted hash, cut to 128 bits.
func stampOf(hash string) string {
	sum := sha256.Sum256([]byte("kura console user\x00" + hash))
	return hex.EncodeToString(sum[:16])
}

// Check checks a user's password and returns the user's role. An unknown
// name costs as much as a wrong password, so the answer's time does not
// tell which names exist.
func (u *Users) Check(name, password string) (string, error) {
	x, err := u.check(name, password)
	return x.Role, err
}

// check is Check with the user's entry.
func (u *Users) check(name, password string) (User, error) {
	us, err := u.load()
	if err != nil {
		return User{}, err
	}
	for _, x := range us {
		if x.Name == name {
			if checkPassword(x.Hash, password) {
				return x, nil
			}
			return User{}, ErrWrongSecret
		}
	}
	checkPassword(dummyHash, password)
	return User{}, ErrWrongSecret
}

// dummyHash is checked for unknown names (a hash of no password anyone has).
var dummyHash = func() string {
	h, _ := hashPassword("no user has this password")
	return h
}()

var b64 = base64.RawStdEncoding

func hashPassword(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// checkPassword checks a password against a stored hash; a hash it cannot
// parse, or whose parameters are out of bounds, matches nothing.
func checkPassword(hash, password string) bool {
	f := strings.Split(hash, "$")
	if len(f) != 5 || f[0] != "argon2id" || f[1] != fmt.Sprintf("v=%d", argon2.Version) {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(f[2], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	// The file is the server's own, but bound what one sign-in may cost.
	if m < 8 || m > 1<<21 || t < 1 || t > 16 || p < 1 || p > 16 {
		return false
	}
	salt, err1 := b64.DecodeString(f[3])
	key, err2 := b64.DecodeString(f[4])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}
