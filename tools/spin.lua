-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
--
-- Wireshark / tshark dissector for the sPIN wire format of spin
-- (struct spin_hdr in include/spin/wire.h: 96 bytes after the UDP header,
-- then the payload).  UDP port 7717 by default; change it in
-- Preferences > Protocols > SPIN, or decode another port with
-- "Decode As... > SPIN".
--
--   tshark -X lua_script:tools/spin.lua -r capture.pcap -Y spin
--   tshark -X lua_script:tools/spin.lua -r capture.pcap -T fields \
--          -e spin.op -e spin.msg_id -e spin.pkt_off -Y spin
--   wireshark -X lua_script:/usr/share/doc/spin/spin.lua
--
-- Or copy it to ~/.local/lib/wireshark/plugins/ (loaded at start-up).
-- The field names (spin.*) are the struct's; the wire version this file
-- knows is 1: packets of another version are shown as such, not decoded.

local spin = Proto("spin", "sPIN (streaming Processing in the Network)")

local ops = {
	[1] = "PUT", [2] = "GET", [3] = "ACK", [4] = "REPLY",
	[5] = "ATOMIC", [6] = "FETCH", [7] = "SACK",
}
local fails = {
	[0] = "ok", [1] = "dropped", [2] = "timeout", [3] = "handler",
	[4] = "pt_disabled", [5] = "no_match", [6] = "no_target",
	[7] = "op_violation", [8] = "queue_full",
}

local f = spin.fields
f.version    = ProtoField.uint8("spin.version", "Version")
f.op         = ProtoField.uint8("spin.op", "Operation", base.DEC, ops)
f.flags      = ProtoField.uint16("spin.flags", "Flags", base.HEX)
f.f_ack_req  = ProtoField.bool("spin.flags.ack_req", "Ack requested", 16, nil, 0x0001)
f.f_from_dev = ProtoField.bool("spin.flags.from_device", "Put from device", 16, nil, 0x0002)
f.f_from_host= ProtoField.bool("spin.flags.from_host", "Put from host", 16, nil, 0x0004)
f.f_rel      = ProtoField.bool("spin.flags.rel", "Reliable", 16, nil, 0x0008)
f.f_sack_req = ProtoField.bool("spin.flags.sack_req", "SACK requested", 16, nil, 0x0010)
f.pt_index   = ProtoField.uint16("spin.pt_index", "Portal table index")
f.seg_size   = ProtoField.uint16("spin.seg_size", "Segment size")
f.src_rank   = ProtoField.uint32("spin.src_rank", "Source rank")
f.src_pid    = ProtoField.uint32("spin.src_pid", "Source pid")
f.job_key    = ProtoField.uint32("spin.job_key", "Job key", base.HEX)
f.msg_id     = ProtoField.uint32("spin.msg_id", "Message id")
f.match_bits = ProtoField.uint64("spin.match_bits", "Match bits", base.HEX)
f.msg_len    = ProtoField.uint32("spin.msg_len", "Message length")
f.pkt_off    = ProtoField.uint32("spin.pkt_off", "Packet offset")
f.remote_off = ProtoField.uint64("spin.remote_off", "Remote offset")
f.hdr_data   = ProtoField.uint64("spin.hdr_data", "Header data", base.HEX)
f.user_hdr   = ProtoField.uint64("spin.user_hdr", "User header word", base.HEX)
f.fail       = ProtoField.uint64("spin.fail", "Failure", base.DEC)
f.auth_tag   = ProtoField.uint64("spin.auth_tag", "Auth tag", base.HEX)
f.payload    = ProtoField.bytes("spin.payload", "Payload")
f.pay_len    = ProtoField.uint32("spin.payload_len", "Payload length")

local e_short = ProtoExpert.new("spin.short", "Shorter than the 96-byte sPIN header",
	expert.group.MALFORMED, expert.severity.ERROR)
local e_version = ProtoExpert.new("spin.bad_version", "Unknown sPIN version",
	expert.group.PROTOCOL, expert.severity.WARN)
spin.experts = { e_short, e_version }

local HDR = 96

function spin.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "SPIN"
	local t = tree:add(spin, tvb(0, math.min(len, HDR)))
	if len < HDR then
		t:add_proto_expert_info(e_short)
		pinfo.cols.info = "sPIN (truncated)"
		return len
	end
	local version = tvb(0, 1):uint()
	t:add(f.version, tvb(0, 1))
	if version ~= 1 then
		t:add_proto_expert_info(e_version)
		pinfo.cols.info = "sPIN version " .. version
		return len
	end
	local op = tvb(1, 1):uint()
	t:add(f.op, tvb(1, 1))
	local ft = t:add(f.flags, tvb(2, 2))
	ft:add(f.f_ack_req, tvb(2, 2))
	ft:add(f.f_from_dev, tvb(2, 2))
	ft:add(f.f_from_host, tvb(2, 2))
	ft:add(f.f_rel, tvb(2, 2))
	ft:add(f.f_sack_req, tvb(2, 2))
	t:add(f.pt_index, tvb(4, 2))
	t:add(f.seg_size, tvb(6, 2))
	t:add(f.src_rank, tvb(8, 4))
	t:add(f.src_pid, tvb(12, 4))
	t:add(f.job_key, tvb(16, 4))
	t:add(f.msg_id, tvb(20, 4))
	t:add(f.match_bits, tvb(24, 8))
	t:add(f.msg_len, tvb(32, 4))
	t:add(f.pkt_off, tvb(36, 4))
	t:add(f.remote_off, tvb(40, 8))
	t:add(f.hdr_data, tvb(48, 8))
	for i = 0, 3 do
		local w = t:add(f.user_hdr, tvb(56 + 8 * i, 8))
		w:prepend_text("[" .. i .. "] ")
	end
	-- ACK and REPLY carry the failure in user_hdr[1] (wire.h)
	if op == 3 or op == 4 then
		local fl = tvb(64, 8):uint64():tonumber()
		t:add(f.fail, tvb(64, 8)):append_text(" (" .. (fails[fl] or "?") .. ")")
	end
	t:add(f.auth_tag, tvb(88, 8))
	local plen = len - HDR
	t:add(f.pay_len, plen):set_generated()
	if plen > 0 then
		t:add(f.payload, tvb(HDR, plen))
	end
	local msg_len = tvb(32, 4):uint()
	local pkt_off = tvb(36, 4):uint()
	local info = string.format("%s rank %u pt %u bits 0x%s id %u len %u off %u",
		ops[op] or ("op " .. op), tvb(8, 4):uint(), tvb(4, 2):uint(),
		tvb(24, 8):uint64():tohex(), tvb(20, 4):uint(), msg_len, pkt_off)
	if op == 3 or op == 4 then
		local fl = tvb(64, 8):uint64():tonumber()
		if fl ~= 0 then
			info = info .. " fail " .. (fails[fl] or tostring(fl))
		end
	end
	pinfo.cols.info = info
	return len
end

spin.prefs.port = Pref.uint("UDP port", 7717, "UDP port of sPIN traffic")
local udp_port = DissectorTable.get("udp.port")
local current = spin.prefs.port
udp_port:add(current, spin)
function spin.prefs_changed()
	if current ~= spin.prefs.port then
		udp_port:remove(current, spin)
		current = spin.prefs.port
		udp_port:add(current, spin)
	end
end
