/**
 * Write agentv code judges in TypeScript or JavaScript (Node >= 20 or Bun, no dependencies).
 *
 * A code judge is any program that reads one JSON payload on stdin and prints one JSON result on
 * stdout. This module reads the payload into a camelCase {@link CodeJudgePayload} (user data
 * untouched), validates the result, calls the eval's model target through agentv's loopback
 * proxy ({@link createTargetClient}) and serves agentv's persistent line protocol
 * ({@link defineCodeJudge}). The names follow `@agentv/eval`, so an existing judge runs by
 * changing its import.
 *
 * It is one file on purpose: `dist/index.js` and `dist/index.d.ts` can be copied next to a judge.
 *
 * ```ts
 * import { createTargetClient, defineCodeJudge } from "./agentv-eval/index.js";
 *
 * defineCodeJudge(async (payload) => {
 *   const target = createTargetClient();
 *   const hits: string[] = [];
 *   if (payload.candidateAnswer.includes("Paris")) hits.push("names Paris");
 *   return { score: hits.length, hits };
 * });
 * ```
 *
 * See docs/judges.md for the payload keys, the result contract, the proxy API and persistent mode.
 */
import { Console } from "node:console";
import { readFileSync } from "node:fs";
import process from "node:process";
export const VERSION = "0.1.0";
/** Environment variable holding the target proxy's base URL. */
export const PROXY_URL_ENV = "AGENTV_TARGET_PROXY_URL";
/** Environment variable holding the target proxy's bearer token. */
export const PROXY_TOKEN_ENV = "AGENTV_TARGET_PROXY_TOKEN";
/** Older name of {@link PROXY_URL_ENV}; agentv exports both. */
export const JUDGE_PROXY_URL_ENV = "AGENTV_JUDGE_PROXY_URL";
/** Older name of {@link PROXY_TOKEN_ENV}; agentv exports both. */
export const JUDGE_PROXY_TOKEN_ENV = "AGENTV_JUDGE_PROXY_TOKEN";
/** Set to `1` by agentv when it wants the judge to serve one JSON line per case. */
export const PERSISTENT_ENV = "AGENTV_JUDGE_PERSISTENT";
/** Version of the persistent line protocol this module speaks. */
export const PROTOCOL_VERSION = 1;
/** Milliseconds a proxy call may take before it fails. */
export const DEFAULT_TIMEOUT_MS = 600_000;
const PROXY_ENV_VARS = [PROXY_URL_ENV, PROXY_TOKEN_ENV, JUDGE_PROXY_URL_ENV, JUDGE_PROXY_TOKEN_ENV];
// ------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------
/** The payload is not a JSON object of the code-judge shape; `path` names the wire key. */
export class PayloadError extends Error {
    path;
    constructor(message, path = "") {
        super(path ? `payload key \`${path}\`: ${message}` : `payload: ${message}`);
        this.name = "PayloadError";
        this.path = path;
    }
}
/** A judge result that agentv would reject (score out of range, NaN, bad details, ...). */
export class ResultError extends Error {
    constructor(message) {
        super(message);
        this.name = "ResultError";
    }
}
/** A target proxy call failed; `message` is the proxy's `error` text when it answered. */
export class TargetError extends Error {
    kind;
    /** The HTTP status when the proxy answered. */
    statusCode;
    constructor(message, kind, statusCode, options) {
        super(message, options);
        this.name = "TargetError";
        this.kind = kind;
        this.statusCode = statusCode;
    }
    /** Same as {@link statusCode}. */
    get status() {
        return this.statusCode;
    }
    /** The token was missing or wrong (HTTP 401). */
    get unauthorized() {
        return this.statusCode === 401;
    }
    /** The call budget (`max_calls`) is spent (HTTP 429). */
    get budgetExhausted() {
        return this.statusCode === 429;
    }
    /** The proxy has shut down (HTTP 503) or is no longer listening. */
    get proxyClosed() {
        return this.statusCode === 503 || this.kind === "connection";
    }
}
/** The proxy URL is set but its token is not, so no call can be authorized. */
export class TargetNotAvailableError extends TargetError {
    constructor(message) {
        super(message, "not_available");
        this.name = "TargetNotAvailableError";
    }
}
/** The proxy refused a call, failed, or could not be reached. See `kind` and `statusCode`. */
export class TargetInvocationError extends TargetError {
    constructor(message, statusCode, kind = "status", options) {
        super(message, kind, statusCode, options);
        this.name = "TargetInvocationError";
    }
}
// ------------------------------------------------------------------------------------------
// Strict JSON (no non-finite numbers), as agentv's own parser reads it
// ------------------------------------------------------------------------------------------
function finiteOnly(_key, value) {
    if (typeof value === "number" && !Number.isFinite(value)) {
        throw new SyntaxError("number out of range");
    }
    return value;
}
function parseJson(text) {
    return JSON.parse(text, finiteOnly);
}
function isObject(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
function hasOwn(obj, key) {
    return Object.prototype.hasOwnProperty.call(obj, key);
}
/** Where the JSON object starting at `text[start]` ends (exclusive), or -1 when unbalanced. */
function objectEnd(text, start) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
        const c = text[i];
        if (inString) {
            if (c === "\\")
                i++;
            else if (c === '"')
                inString = false;
        }
        else if (c === '"') {
            inString = true;
        }
        else if (c === "{" || c === "[") {
            depth++;
        }
        else if (c === "}" || c === "]") {
            depth--;
            if (depth === 0)
                return i + 1;
        }
    }
    return -1;
}
/**
 * Finds the first JSON object in a model reply: the whole reply when it is an object; otherwise
 * the first `{` from which a complete JSON object parses, so objects wrapped in prose or in
 * ```json fences are found and a `{` that starts no valid object is skipped. `undefined` when
 * there is none. Mirrors agentv's own reading of LLM judge replies.
 */
export function extractJsonObject(text) {
    const trimmed = text.trim();
    try {
        const whole = parseJson(trimmed);
        if (isObject(whole))
            return whole;
    }
    catch {
        // not one JSON document: look inside
    }
    for (let start = trimmed.indexOf("{"); start !== -1; start = trimmed.indexOf("{", start + 1)) {
        const end = objectEnd(trimmed, start);
        if (end === -1)
            continue;
        try {
            const value = parseJson(trimmed.slice(start, end));
            if (isObject(value))
                return value;
        }
        catch {
            // this brace starts no valid object
        }
    }
    return undefined;
}
/**
 * Message content as text: strings as they are, content-part arrays by their `text` parts joined
 * by newlines, anything else as compact JSON.
 */
export function contentText(content) {
    if (typeof content === "string")
        return content;
    if (Array.isArray(content) && content.every((p) => isObject(p) && typeof p.text === "string")) {
        return content.map((p) => p.text).join("\n");
    }
    return JSON.stringify(content) ?? "null";
}
function kindOf(value) {
    if (value === null || value === undefined)
        return "null";
    if (Array.isArray(value))
        return "an array";
    switch (typeof value) {
        case "boolean":
            return "a boolean";
        case "number":
            return "a number";
        case "string":
            return "a string";
        case "object":
            return "an object";
        default:
            return typeof value;
    }
}
/**
 * Takes the known keys out of one wire object; what is left becomes `extra`. JSON null counts as
 * absent everywhere (4.x sends null for unknown values).
 */
class Reader {
    path;
    rest;
    constructor(obj, path) {
        this.path = path;
        if (!isObject(obj))
            throw new PayloadError(`expected an object, got ${kindOf(obj)}`, path);
        // Spread defines own properties, so a `__proto__` key stays data.
        this.rest = { ...obj };
    }
    at(key) {
        return this.path ? `${this.path}.${key}` : key;
    }
    take(key) {
        if (!hasOwn(this.rest, key))
            return undefined;
        const value = this.rest[key];
        delete this.rest[key];
        return value === null ? undefined : value;
    }
    fail(key, want, value) {
        throw new PayloadError(`expected ${want}, got ${kindOf(value)}`, this.at(key));
    }
    optText(key) {
        const value = this.take(key);
        if (value === undefined || typeof value === "string")
            return value;
        return this.fail(key, "a string", value);
    }
    text(key) {
        return this.optText(key) ?? "";
    }
    requiredText(key, alias) {
        const value = this.optText(key) ?? (alias === undefined ? undefined : this.optText(alias));
        if (value === undefined)
            throw new PayloadError("required string is missing", this.at(key));
        return value;
    }
    optInteger(key) {
        const value = this.take(key);
        if (value === undefined || (typeof value === "number" && Number.isInteger(value)))
            return value;
        return this.fail(key, "an integer", value);
    }
    integer(key) {
        return this.optInteger(key) ?? 0;
    }
    optNumber(key) {
        const value = this.take(key);
        if (value === undefined || typeof value === "number")
            return value;
        return this.fail(key, "a number", value);
    }
    value(key) {
        return this.take(key);
    }
    array(key) {
        const value = this.take(key);
        if (value === undefined)
            return [];
        if (Array.isArray(value))
            return value;
        return this.fail(key, "an array", value);
    }
    textList(key) {
        const items = this.array(key);
        items.forEach((item, i) => {
            if (typeof item !== "string")
                throw new PayloadError(`expected a string, got ${kindOf(item)}`, `${this.at(key)}[${i}]`);
        });
        return items;
    }
    optMapping(key) {
        const value = this.take(key);
        if (value === undefined || isObject(value))
            return value;
        return this.fail(key, "an object", value);
    }
    mapping(key) {
        return this.optMapping(key) ?? {};
    }
    countMap(key) {
        const mapping = this.mapping(key);
        for (const [name, count] of Object.entries(mapping)) {
            if (typeof count !== "number" || !Number.isInteger(count)) {
                throw new PayloadError(`expected an integer, got ${kindOf(count)}`, `${this.at(key)}.${name}`);
            }
        }
        return mapping;
    }
    optDurationsMap(key) {
        const mapping = this.optMapping(key);
        if (mapping === undefined)
            return undefined;
        for (const [name, values] of Object.entries(mapping)) {
            const where = `${this.at(key)}.${name}`;
            if (!Array.isArray(values))
                throw new PayloadError(`expected an array, got ${kindOf(values)}`, where);
            values.forEach((v, i) => {
                if (typeof v !== "number")
                    throw new PayloadError(`expected a number, got ${kindOf(v)}`, `${where}[${i}]`);
            });
        }
        return mapping;
    }
    durationsMap(key) {
        return this.optDurationsMap(key) ?? {};
    }
    nested(key, parse) {
        const value = this.take(key);
        return value === undefined ? undefined : parse(value, this.at(key));
    }
    nestedList(key, parse) {
        const where = this.at(key);
        return this.array(key).map((item, i) => parse(item, `${where}[${i}]`));
    }
    extra() {
        return this.rest;
    }
}
/** Drops the properties whose value is `undefined`, so absent values stay absent. */
function compact(obj) {
    for (const key of Object.keys(obj)) {
        if (obj[key] === undefined)
            delete obj[key];
    }
    return obj;
}
const parseTokenUsage = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        input: r.integer("input"),
        output: r.integer("output"),
        cached: r.optInteger("cached"),
        reasoning: r.optInteger("reasoning"),
        extra: r.extra(),
    });
};
const parseToolCall = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        tool: r.requiredText("tool", "name"),
        input: r.value("input"),
        output: r.value("output"),
        id: r.optText("id"),
        timestamp: r.optText("timestamp"),
        startTime: r.optText("start_time"),
        endTime: r.optText("end_time"),
        durationMs: r.optNumber("duration_ms"),
        status: r.optText("status"),
        extra: r.extra(),
    });
};
const parseMessage = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        role: r.requiredText("role"),
        name: r.optText("name"),
        content: r.value("content"),
        toolCalls: r.nestedList("tool_calls", parseToolCall),
        id: r.optText("id"),
        timestamp: r.optText("timestamp"),
        startTime: r.optText("start_time"),
        endTime: r.optText("end_time"),
        durationMs: r.optNumber("duration_ms"),
        metadata: r.optMapping("metadata"),
        tokenUsage: r.nested("token_usage", parseTokenUsage),
        extra: r.extra(),
    });
};
const parseTraceEvent = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        type: r.requiredText("type"),
        timestamp: r.optText("timestamp"),
        id: r.optText("id"),
        name: r.optText("name"),
        input: r.value("input"),
        output: r.value("output"),
        text: r.optText("text"),
        metadata: r.optMapping("metadata"),
        extra: r.extra(),
    });
};
const parseTraceSummary = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        eventCount: r.integer("event_count"),
        toolNames: r.textList("tool_names"),
        toolCallsByName: r.countMap("tool_calls_by_name"),
        errorCount: r.integer("error_count"),
        toolCalls: r.countMap("tool_calls"),
        toolDurations: r.durationsMap("tool_durations"),
        llmCallCount: r.optInteger("llm_call_count"),
        tokenUsage: r.nested("token_usage", parseTokenUsage),
        costUsd: r.optNumber("cost_usd"),
        durationMs: r.optNumber("duration_ms"),
        extra: r.extra(),
    });
};
const parseExecutionMetrics = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        tokenUsage: r.nested("token_usage", parseTokenUsage),
        costUsd: r.optNumber("cost_usd"),
        durationMs: r.optNumber("duration_ms"),
        toolDurations: r.optDurationsMap("tool_durations"),
        toolCallCount: r.optInteger("tool_call_count"),
        explorationRatio: r.optNumber("exploration_ratio"),
        tokensPerTool: r.optNumber("tokens_per_tool"),
        extra: r.extra(),
    });
};
const parseTraceTool = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        name: r.optText("name"),
        callId: r.optText("call_id"),
        input: r.value("input"),
        output: r.value("output"),
        status: r.optText("status"),
        extra: r.extra(),
    });
};
const parseTraceStep = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        type: r.requiredText("type"),
        eventId: r.optText("event_id"),
        parentEventId: r.optText("parent_event_id"),
        ordinal: r.optInteger("ordinal"),
        timestamp: r.optText("timestamp"),
        durationMs: r.optNumber("duration_ms"),
        message: r.value("message"),
        tool: r.nested("tool", parseTraceTool),
        metadata: r.optMapping("metadata"),
        extra: r.extra(),
    });
};
const parseTrace = (value, path) => {
    const r = new Reader(value, path);
    return compact({
        eventCount: r.optInteger("event_count"),
        toolCalls: r.countMap("tool_calls"),
        errorCount: r.optInteger("error_count"),
        llmCallCount: r.optInteger("llm_call_count"),
        toolDurations: r.durationsMap("tool_durations"),
        messages: r.nestedList("messages", parseMessage),
        events: r.nestedList("events", parseTraceStep),
        tokenUsage: r.nested("token_usage", parseTokenUsage),
        costUsd: r.optNumber("cost_usd"),
        durationMs: r.optNumber("duration_ms"),
        startTime: r.optText("start_time"),
        endTime: r.optText("end_time"),
        metadata: r.optMapping("metadata"),
        extra: r.extra(),
    });
};
function payloadFromWire(wire) {
    const r = new Reader(wire, "");
    return compact({
        evalId: r.text("eval_id"),
        question: r.text("question"),
        expectedOutcome: r.text("expected_outcome"),
        expectedMessages: r.array("expected_messages"),
        referenceAnswer: r.text("reference_answer"),
        candidateAnswer: r.text("candidate_answer"),
        outputMessages: r.nestedList("output_messages", parseMessage),
        guidelineFiles: r.textList("guideline_files"),
        inputFiles: r.textList("input_files"),
        inputMessages: r.array("input_messages"),
        traceSummary: r.nested("trace_summary", parseTraceSummary),
        candidateTrace: r.nestedList("candidate_trace", parseTraceEvent),
        executionMetrics: r.nested("execution_metrics", parseExecutionMetrics),
        config: r.mapping("config"),
        criteria: r.text("criteria"),
        expectedOutput: r.array("expected_output"),
        output: r.optText("output"),
        outputPath: r.optText("output_path"),
        messages: r.nestedList("messages", parseMessage),
        input: r.array("input"),
        metadata: r.mapping("metadata"),
        trace: r.nested("trace", parseTrace),
        tokenUsage: r.nested("token_usage", parseTokenUsage),
        costUsd: r.optNumber("cost_usd"),
        durationMs: r.optNumber("duration_ms"),
        startTime: r.optText("start_time"),
        endTime: r.optText("end_time"),
        fileChanges: r.optText("file_changes"),
        workspacePath: r.optText("workspace_path"),
        extra: r.extra(),
    });
}
/**
 * Parses a payload: its JSON text (a leading BOM is ignored), its UTF-8 bytes, or an already
 * parsed wire object (snake_case keys).
 */
export function parseCodeJudgePayload(input) {
    let wire = input;
    if (input instanceof Uint8Array) {
        try {
            wire = new TextDecoder("utf-8", { fatal: true }).decode(input);
        }
        catch {
            throw new PayloadError("not valid UTF-8");
        }
    }
    if (typeof wire === "string") {
        const text = wire.startsWith("\ufeff") ? wire.slice(1) : wire;
        try {
            wire = parseJson(text);
        }
        catch (e) {
            throw new PayloadError(`not valid JSON: ${e.message}`);
        }
    }
    if (!isObject(wire))
        throw new PayloadError(`expected a JSON object, got ${kindOf(wire)}`);
    return payloadFromWire(wire);
}
let servingPersistent = false;
/** Reads all of stdin and parses it as the payload. */
export async function readCodeJudgePayload() {
    if (servingPersistent) {
        throw new Error("in persistent mode stdin carries agentv's protocol: use the payload the handler receives");
    }
    const chunks = [];
    for await (const chunk of process.stdin)
        chunks.push(chunk);
    return parseCodeJudgePayload(new Uint8Array(Buffer.concat(chunks)));
}
function lastAssistantText(messages) {
    for (let i = messages.length - 1; i >= 0; i--) {
        const m = messages[i];
        if (m.role === "assistant" && m.content !== undefined)
            return contentText(m.content);
    }
    return undefined;
}
/**
 * The candidate's answer, whichever generation sent it: `candidateAnswer`, else `output`, else
 * the JSON string stored at `outputPath` (4.x moves answers over 50 000 characters there), else
 * the last assistant message.
 */
export function answerText(payload) {
    if (payload.candidateAnswer)
        return payload.candidateAnswer;
    if (payload.output !== undefined)
        return payload.output;
    if (payload.outputPath) {
        let stored;
        try {
            stored = parseJson(readFileSync(payload.outputPath, "utf8"));
        }
        catch (e) {
            throw new PayloadError(`cannot read the answer from ${payload.outputPath}: ${e.message}`, "output_path");
        }
        return typeof stored === "string" ? stored : JSON.stringify(stored);
    }
    return lastAssistantText(payload.outputMessages.length ? payload.outputMessages : payload.messages) ?? "";
}
/** What a good answer achieves: `expectedOutcome` (2.x), else `criteria` (4.x). */
export function criteriaText(payload) {
    return payload.expectedOutcome || payload.criteria;
}
const RESULT_KEYS = ["score", "hits", "misses", "reasoning", "details", "assertions", "pass"];
/**
 * Checks a score the way agentv does (docs/architecture.md#scoring): a finite number in [0, 1], else ResultError.
 */
export function checkScore(score) {
    if (typeof score !== "number")
        throw new ResultError(`score must be a number in [0, 1], got ${kindOf(score)}: ${String(score)}`);
    if (!Number.isFinite(score))
        throw new ResultError(`score must be a finite number in [0, 1], got ${score}`);
    if (score < 0 || score > 1) {
        throw new ResultError(`score ${score} is outside [0, 1]; agentv does not clamp code judge scores, so scale it in the judge (e.g. passed / total)`);
    }
    return score;
}
function stringList(name, items) {
    if (!Array.isArray(items))
        throw new ResultError(`${name} must be a list of strings, got ${kindOf(items)}`);
    items.forEach((item, i) => {
        if (typeof item !== "string")
            throw new ResultError(`${name}[${i}] must be a string, got ${kindOf(item)}`);
    });
    return [...items];
}
/** Throws when `value` holds something JSON cannot carry faithfully (NaN, functions, ...). */
function checkJson(value, path) {
    if (value === null || typeof value === "string" || typeof value === "boolean")
        return;
    if (typeof value === "number") {
        if (!Number.isFinite(value))
            throw new ResultError(`details are not valid JSON: ${path} is ${value}`);
        return;
    }
    if (Array.isArray(value)) {
        value.forEach((v, i) => checkJson(v, `${path}[${i}]`));
        return;
    }
    if (isObject(value) && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
        for (const [k, v] of Object.entries(value))
            checkJson(v, `${path}.${k}`);
        return;
    }
    throw new ResultError(`details are not valid JSON: ${path} is ${typeof value === "object" ? "a non-plain object" : typeof value}`);
}
/**
 * Validates what a handler returned and gives the wire result (empty lists and absent values
 * omitted). Throws ResultError when agentv would reject it.
 */
export function validateResult(value) {
    if (typeof value === "number")
        return { score: checkScore(value) };
    if (!isObject(value))
        throw new ResultError(`the judge returned ${kindOf(value)}; return an object with a \`score\`, or a number`);
    const unknown = Object.keys(value).filter((k) => !RESULT_KEYS.includes(k));
    if (unknown.length)
        throw new ResultError(`unknown result key \`${unknown[0]}\`; allowed: ${RESULT_KEYS.join(", ")}`);
    const hits = value.hits === undefined || value.hits === null ? [] : stringList("hits", value.hits);
    const misses = value.misses === undefined || value.misses === null ? [] : stringList("misses", value.misses);
    let score = value.score ?? undefined;
    const assertions = value.assertions ?? undefined;
    if (assertions !== undefined) {
        if (!Array.isArray(assertions))
            throw new ResultError(`assertions must be a list, got ${kindOf(assertions)}`);
        let passed = 0;
        assertions.forEach((a, i) => {
            if (!isObject(a) || typeof a.text !== "string")
                throw new ResultError(`assertions[${i}] must be an object with a string \`text\``);
            if (a.passed) {
                passed++;
                hits.push(a.text);
            }
            else {
                misses.push(a.text);
            }
        });
        if (score === undefined)
            score = assertions.length ? passed / assertions.length : 0;
    }
    if (hasOwn(value, "pass") && score === undefined) {
        if (typeof value.pass !== "boolean")
            throw new ResultError(`pass must be a boolean, got ${kindOf(value.pass)}`);
        score = value.pass ? 1 : 0;
    }
    if (score === undefined)
        throw new ResultError("a judge result needs a `score` (a number in [0, 1])");
    const out = { score: checkScore(score) };
    if (hits.length)
        out.hits = hits;
    if (misses.length)
        out.misses = misses;
    if (value.reasoning !== undefined && value.reasoning !== null) {
        if (typeof value.reasoning !== "string")
            throw new ResultError(`reasoning must be a string, got ${kindOf(value.reasoning)}`);
        out.reasoning = value.reasoning;
    }
    if (value.details !== undefined && value.details !== null) {
        if (!isObject(value.details)) {
            throw new ResultError(`details must be a JSON object, got ${kindOf(value.details)}; wrap the value, e.g. {"value": ...}`);
        }
        checkJson(value.details, "details");
        out.details = value.details;
    }
    return out;
}
/** The score-0 result printed when a judge could not grade. */
export function failedResult(message) {
    return { score: 0, misses: [message], reasoning: `Evaluation failed: ${message}` };
}
/** Validates a result and prints it as one JSON line on stdout. */
export function emitResult(result) {
    process.stdout.write(`${JSON.stringify(validateResult(result))}\n`);
}
const parseInvokeResponse = (value, path) => {
    const r = new Reader(value, path);
    const messages = r.nestedList("outputMessages", parseMessage);
    const legacy = r.nestedList("output", parseMessage); // 4.x proxies name it `output`
    const outputMessages = messages.length ? messages : legacy;
    const rawText = r.optText("rawText");
    return compact({
        outputMessages,
        rawText,
        error: r.optText("error"),
        tokenUsage: r.nested("tokenUsage", parseTokenUsage),
        text: rawText ?? lastAssistantText(outputMessages) ?? "",
        extra: r.extra(),
    });
};
const parseProxyInfo = (value, path) => {
    const r = new Reader(value, path);
    return {
        targetName: r.text("targetName"),
        maxCalls: r.integer("maxCalls"),
        callCount: r.integer("callCount"),
        availableTargets: r.textList("availableTargets"),
        extra: r.extra(),
    };
};
function requestBody(request) {
    const req = typeof request === "string" ? { question: request } : request;
    if (!isObject(req) || typeof req.question !== "string")
        throw new TypeError("an invoke request needs a string `question`");
    const body = { question: req.question };
    for (const key of ["systemPrompt", "evalCaseId", "attempt", "target"]) {
        if (req[key] !== undefined && req[key] !== null)
            body[key] = req[key];
    }
    return body;
}
function errorMessage(status, text) {
    try {
        const body = parseJson(text);
        if (isObject(body) && typeof body.error === "string")
            return body.error;
    }
    catch {
        // not JSON
    }
    return text.trim() || `HTTP ${status}`;
}
/**
 * Calls the eval's model target (or another configured one) through agentv's loopback proxy.
 * The proxy holds the credentials and the call budget; the judge only has a URL and a bearer
 * token valid for the current case. Create it inside the handler: in persistent mode each case
 * has its own proxy.
 */
export class TargetClient {
    url;
    timeoutMs;
    #token;
    constructor(url, token, options = {}) {
        this.url = url.replace(/\/+$/, "");
        this.#token = token;
        this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    }
    /**
     * The client for the current case's proxy; `undefined` when the evaluator has no `target`
     * block. Throws TargetNotAvailableError when the URL is set without a token.
     */
    static fromEnv(options = {}, env = process.env) {
        const url = env[PROXY_URL_ENV] || env[JUDGE_PROXY_URL_ENV];
        const token = env[PROXY_TOKEN_ENV] || env[JUDGE_PROXY_TOKEN_ENV];
        if (!url)
            return undefined;
        if (!token) {
            throw new TargetNotAvailableError(`${PROXY_URL_ENV} is set but ${PROXY_TOKEN_ENV} is missing; the proxy cannot be used`);
        }
        return new TargetClient(url, token, options);
    }
    /** Asks the target one question; counts one call against the budget. */
    async invoke(request, options = {}) {
        const answer = await this.call("POST", "/invoke", requestBody(request), options);
        return protocolParse(answer, parseInvokeResponse, "answer");
    }
    /**
     * Asks several questions in one call; each counts against the budget, and a batch that would
     * pass it is refused whole (status 429). One response per request, in order; a failed item
     * has `error` set.
     */
    async invokeBatch(requests, options = {}) {
        const body = { requests: requests.map(requestBody) };
        const answer = await this.call("POST", "/invokeBatch", body, options);
        if (!isObject(answer) || !Array.isArray(answer.responses)) {
            throw new TargetInvocationError("unexpected answer: no `responses` array", 200, "protocol");
        }
        if (answer.responses.length !== requests.length) {
            throw new TargetInvocationError(`unexpected answer: ${answer.responses.length} responses for ${requests.length} requests`, 200, "protocol");
        }
        return answer.responses.map((item, i) => protocolParse(item, parseInvokeResponse, `responses[${i}]`));
    }
    /** The default target's name, the budget, calls so far, and the targets a call may name. */
    async getInfo(options = {}) {
        return protocolParse(await this.call("GET", "/info", undefined, options), parseProxyInfo, "info");
    }
    toJSON() {
        return { url: this.url, token: "***", timeoutMs: this.timeoutMs };
    }
    async call(method, path, body, options) {
        const limit = options.timeoutMs ?? this.timeoutMs;
        const headers = { Authorization: `Bearer ${this.#token}`, Accept: "application/json" };
        if (body !== undefined)
            headers["Content-Type"] = "application/json";
        let status;
        let text;
        try {
            const response = await fetch(this.url + path, {
                method,
                headers,
                body: body === undefined ? undefined : JSON.stringify(body),
                signal: AbortSignal.timeout(limit),
            });
            status = response.status;
            text = await response.text();
        }
        catch (e) {
            const name = e?.name;
            if (name === "TimeoutError" || name === "AbortError") {
                throw new TargetInvocationError(`no answer from ${this.url}${path} within ${limit / 1000}s`, undefined, "timeout", { cause: e });
            }
            const cause = e?.cause;
            const reason = cause?.code ?? cause?.message ?? e?.message;
            throw new TargetInvocationError(`cannot reach ${this.url}${path}: ${reason}`, undefined, "connection", { cause: e });
        }
        if (status < 200 || status >= 300)
            throw new TargetInvocationError(errorMessage(status, text), status, "status");
        try {
            return parseJson(text);
        }
        catch {
            throw new TargetInvocationError(`unexpected answer (not JSON): ${JSON.stringify(text.slice(0, 200))}`, status, "protocol");
        }
    }
}
function protocolParse(answer, parse, path) {
    try {
        return parse(answer, path);
    }
    catch (e) {
        if (e instanceof PayloadError)
            throw new TargetInvocationError(`unexpected answer: ${e.message}`, 200, "protocol");
        throw e;
    }
}
/**
 * The client for the current case's proxy, or `undefined` when the evaluator has no `target`
 * block (as in `@agentv/eval`). Throws TargetNotAvailableError when the URL is set without a
 * token.
 */
export function createTargetClient(options = {}) {
    return TargetClient.fromEnv(options);
}
/** A client for an explicit proxy address (tests, tools). */
export function createTargetClientInternal(url, token, options = {}) {
    return new TargetClient(url, token, options);
}
function describe(error) {
    if (error instanceof PayloadError || error instanceof ResultError || error instanceof TargetError)
        return error.message;
    if (error instanceof Error)
        return error.message ? `${error.name}: ${error.message}` : error.name;
    return `thrown: ${String(error)}`;
}
function report(error) {
    const message = describe(error);
    if (error instanceof Error && !(error instanceof PayloadError || error instanceof ResultError || error instanceof TargetError)) {
        process.stderr.write(`${error.stack ?? message}\n`);
    }
    process.stderr.write(`judge failed: ${message}\n`);
    return message;
}
async function grade(handler, payload) {
    const target = createTargetClient();
    return validateResult(await handler(payload, { target }));
}
const CONSOLE_METHODS = ["log", "info", "debug", "dir", "dirxml", "table", "group", "groupCollapsed", "count", "time", "timeLog", "timeEnd"];
/**
 * Keeps stdout for agentv: returns a writer on the real stdout, and from now on sends what the
 * judge writes to stdout (console.log, process.stdout.write) to stderr. Child processes that
 * inherit file descriptor 1 still write to it: spawn them with `stdio: ["ignore", 2, 2]`.
 */
function claimStdout() {
    const stdout = process.stdout;
    const write = stdout.write.bind(stdout);
    const toStderr = process.stderr.write.bind(process.stderr);
    stdout.write = ((...args) => toStderr(...args));
    const errConsole = new Console({ stdout: process.stderr, stderr: process.stderr });
    const target = console;
    const source = errConsole;
    for (const name of CONSOLE_METHODS) {
        if (typeof source[name] === "function")
            target[name] = source[name].bind(errConsole);
    }
    // Nobody reads our stdout any more (agentv stopped, or `| head`): end quietly.
    const closed = (err) => err?.code === "EPIPE";
    stdout.on("error", (err) => {
        if (closed(err))
            process.exit(1);
        throw err;
    });
    return (line) => new Promise((resolve, reject) => {
        write(line, (err) => {
            if (closed(err))
                process.exit(1);
            if (err)
                reject(err);
            else
                resolve();
        });
    });
}
function resultLine(obj) {
    return `${JSON.stringify(obj)}\n`;
}
async function runOnce(handler) {
    const send = claimStdout();
    let line;
    let code = 0;
    try {
        const chunks = [];
        for await (const chunk of process.stdin)
            chunks.push(chunk);
        const payload = parseCodeJudgePayload(new Uint8Array(Buffer.concat(chunks)));
        line = resultLine({ ...(await grade(handler, payload)) });
    }
    catch (e) {
        line = resultLine({ ...failedResult(report(e)) });
        code = 1;
    }
    await send(line);
    return code;
}
/** Points the proxy variables at this case's proxy (or removes them) and returns the undo. */
function useCaseProxy(proxy) {
    const saved = PROXY_ENV_VARS.map((name) => [name, process.env[name]]);
    for (const name of PROXY_ENV_VARS)
        delete process.env[name];
    if (proxy) {
        process.env[PROXY_URL_ENV] = proxy.url;
        process.env[JUDGE_PROXY_URL_ENV] = proxy.url;
        process.env[PROXY_TOKEN_ENV] = proxy.token;
        process.env[JUDGE_PROXY_TOKEN_ENV] = proxy.token;
    }
    return () => {
        for (const [name, value] of saved) {
            if (value === undefined)
                delete process.env[name];
            else
                process.env[name] = value;
        }
    };
}
class BadRequest extends Error {
    caseId;
    constructor(caseId, message) {
        super(message);
        this.caseId = caseId;
    }
}
function parseRequest(line) {
    let message;
    try {
        message = parseJson(line);
    }
    catch (e) {
        throw new BadRequest(null, `request line is not valid JSON: ${e.message}`);
    }
    if (!isObject(message))
        throw new BadRequest(null, `request line must be a JSON object, got ${kindOf(message)}`);
    const id = message.id;
    if (typeof id !== "string" && typeof id !== "number")
        throw new BadRequest(null, "request line needs an `id` (a string or a number)");
    const payload = message.payload;
    if (!isObject(payload))
        throw new BadRequest(id, `request \`payload\` must be a JSON object, got ${kindOf(payload)}`);
    const proxy = message.proxy ?? undefined;
    if (proxy !== undefined && !(isObject(proxy) && typeof proxy.url === "string" && typeof proxy.token === "string")) {
        throw new BadRequest(id, "request `proxy` must be null or an object with string `url` and `token`");
    }
    return { id, payload, proxy: proxy };
}
async function serveCase(handler, line) {
    let request;
    try {
        request = parseRequest(line);
    }
    catch (e) {
        const bad = e;
        process.stderr.write(`judge: bad request line: ${bad.message}\n`);
        return resultLine({ id: bad.caseId, error: bad.message });
    }
    const restore = useCaseProxy(request.proxy);
    try {
        const result = await grade(handler, parseCodeJudgePayload(request.payload));
        return resultLine({ id: request.id, result });
    }
    catch (e) {
        return resultLine({ id: request.id, error: report(e) });
    }
    finally {
        restore();
    }
}
/** Splits stdin into lines of bytes, so a multi-byte character cut across chunks stays whole. */
async function* stdinLines() {
    let pending = Buffer.alloc(0);
    for await (const chunk of process.stdin) {
        pending = Buffer.concat([pending, chunk]);
        let newline;
        while ((newline = pending.indexOf(0x0a)) !== -1) {
            yield pending.subarray(0, newline);
            pending = pending.subarray(newline + 1);
        }
    }
    if (pending.length)
        yield pending;
}
async function servePersistent(handler) {
    servingPersistent = true;
    const send = claimStdout();
    await send(resultLine({ ready: true, protocol: PROTOCOL_VERSION, sdk: `typescript/${VERSION}` }));
    const decoder = new TextDecoder("utf-8", { fatal: true });
    for await (const raw of stdinLines()) {
        let line;
        try {
            line = decoder.decode(raw).trim();
        }
        catch {
            await send(resultLine({ id: null, error: "request line is not valid UTF-8" }));
            continue;
        }
        if (line)
            await send(await serveCase(handler, line));
    }
    return 0;
}
/**
 * Runs a judge handler and exits (as `@agentv/eval`'s `defineCodeJudge`: call it once, at the top
 * level of the judge's module).
 *
 * `handler(payload, { target })` returns a result `{score, hits?, misses?, reasoning?, details?}`
 * (or a 4.x-style result, or a bare score), possibly as a promise.
 *
 * One-shot (the default): reads the payload from stdin, prints the result as one JSON line and
 * exits 0. When the handler throws, or its result is invalid, prints a score-0 result whose miss
 * and reasoning carry the message, and exits 1 (agentv records a grader error).
 *
 * Persistent (`AGENTV_JUDGE_PERSISTENT=1`): announces itself with a ready line, then answers one
 * JSON line per request line until stdin closes; an exception becomes an error line and the judge
 * keeps serving. See docs/judges.md.
 *
 * In both modes stdout belongs to agentv: `console.log` inside the handler goes to stderr.
 */
export async function defineCodeJudge(handler) {
    const code = process.env[PERSISTENT_ENV] === "1" ? await servePersistent(handler) : await runOnce(handler);
    process.exit(code);
}
/** `@agentv/sdk` 4.x name of {@link defineCodeJudge}. */
export const defineCodeGrader = defineCodeJudge;
/** 4.x assertion style: the handler returns `{pass: boolean}` (or any result); pass → 1, fail → 0. */
export const defineAssertion = defineCodeJudge;
