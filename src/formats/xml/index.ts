// The XML data type: codec (protect in place) and flattener (CSV layout), one import for the engine.

export { createXmlCodec, xmlCodec, type XmlCodecOptions } from './codec.ts';
export { createXmlFlattener, flattenXml, XML_ELEMENT_COLUMN } from './flatten.ts';
export { DEFAULT_XML_LIMITS, type XmlLimits } from './scanner.ts';
