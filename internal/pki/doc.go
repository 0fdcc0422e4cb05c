// Package pki is Kura's certificate authority: it issues the server's TLS
// certificate and the agents' client certificates, builds the TLS
// configurations both ends use, and mints the one-time tokens that carry the
// CA's fingerprint to a new agent or an admin CLI.
//
// # Trust model
//
// The server owns a private CA (ECDSA P-256, self-signed, ten years) kept in
// its home directory as ca.crt and ca.key (the key mode 0600). Nobody else
// needs the CA to be in a system trust store: every client either already has
// ca.crt, or holds its SHA-256 fingerprint (see [Fingerprint]) and pins it.
//
// All traffic is HTTPS with TLS 1.3 only. The server presents a certificate
// issued by its CA (server.crt, server.key in the same home; reissued
// automatically when the host list grows, the CA changes, or it nears
// expiry) and sends the CA certificate after the leaf, so that a client that
// knows only the fingerprint can find it in the chain.
//
// # Enrollment
//
//  1. An admin asks the server for an enrollment token. The server stores
//     only [HashSecret] of the token's secret, and hands out
//     [Token.String], which also carries the CA fingerprint.
//  2. The agent parses the token ([ParseToken]), makes a key and a CSR
//     ([NewClientKey]), and connects with [PinnedTLSConfig]: the server is
//     accepted only if its chain contains a CA with the token's fingerprint
//     and the leaf verifies against that CA, for the server's host name and
//     for server authentication.
//  3. The agent sends the CSR and the token. The server checks the secret's
//     hash with [HashEqual], burns the token, signs the CSR with
//     [CA.SignClient] under the name it chose (the CSR's own subject is
//     ignored), records the serial, and returns the certificate and the CA
//     PEM.
//  4. From then on the agent dials with [ClientTLSConfig]: RootCAs is the
//     Kura CA alone, and the client certificate makes the connection mutual
//     TLS. The server runs [ServerTLSConfig], which verifies a client
//     certificate whenever one is presented.
//
// The admin CLI logs in the same way as step 2 with an admin token: the
// pinned fingerprint authenticates the server, the token's secret
// authenticates the admin, and the CLI then keeps the CA PEM for
// [ClientTLSConfig] (without a client certificate; admin calls carry a
// bearer token instead).
//
// # Revocation
//
// There are no CRLs and no OCSP. The server's catalog keeps a table of
// enrolled clients with each certificate's serial ([Serial]) and
// fingerprint ([Fingerprint]); on every connection the server looks the
// verified client certificate up in that table and refuses one that is
// unknown or revoked. This package only provides the identifiers.
//
// # Tokens
//
// A token is printable ASCII:
//
//	kura1-<kind>-<secret>-<cafp>
//
// kind is "enroll" or "admin"; secret is 32 random bytes in unpadded
// base64url (43 characters from A-Z a-z 0-9 - _); cafp is the CA
// fingerprint, 64 lowercase hex digits. The secret may itself contain '-',
// but neither the kind nor the fingerprint can, so the token splits
// unambiguously at the first '-' after the prefix and at the last '-'.
// "kura1" is the format version; a new format takes a new prefix.
//
// # Files
//
// Keys are PKCS #8 PEM ("PRIVATE KEY"), certificates PEM ("CERTIFICATE").
// Every file is written atomically: a temporary file in the same directory,
// fsync, rename, fsync of the directory. A key is written before its
// certificate, so a crash leaves at worst a key without its certificate.
// For the CA that is an error that needs an operator (a new CA would
// invalidate every enrolled agent); for the server certificate it just
// means a reissue.
package pki
